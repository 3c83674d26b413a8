"""Wall time of `sink-nb demo`: the twins one after the other (`--jobs 1`, all cores each) against two processes at
once (`--jobs 2`, one thread each), on an idle machine and with a competing CPU-bound process.

    python bench/demo_time.py                       # the full demo (600 steps), 4 runs
    python bench/demo_time.py --steps 100           # quicker

It prints a table and, with --out, writes it after the command, the machine, the versions and the load before and
after (`bench_env`); the busy row's load is the competing process this script starts.
"""
import argparse, json, os, platform, subprocess, sys, tempfile, time
from pathlib import Path

from bench_env import Output

SINK_NB = Path(sys.executable).parent / 'sink-nb'
BUSY = 'import time\nt = time.time()\nwhile time.time() - t < 3600: pass'      # one core's worth of competing work


def demo(jobs:int, steps:int) -> float:
    "Seconds of one `sink-nb demo` run."
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        subprocess.run([str(SINK_NB), 'demo', '--jobs', str(jobs), '--steps', str(steps), '--out', tmp, '--quiet'],
                       check=True, capture_output=True)
        return time.perf_counter() - t0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--steps', type=int, default=600)
    p.add_argument('--out', type=Path)
    p.add_argument('--json', type=Path)
    args = p.parse_args(argv)
    if args.steps < 1: p.error(f"--steps must be at least 1, got {args.steps}")
    out = Output('demo_time.py', argv)
    rows = []
    for load in ('idle', 'one competing process'):
        busy = subprocess.Popen([sys.executable, '-c', BUSY]) if load != 'idle' else None
        try:
            for jobs in (1, 2): rows.append(dict(load=load, jobs=jobs, seconds=round(demo(jobs, args.steps), 1)))
        finally:
            if busy: busy.kill(); busy.wait()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()
    head = f"sink-nb demo, {args.steps} steps per model, {cores} cores, {platform.processor() or platform.machine()}"
    out.say(head)
    out.say(f"{'load':<22} {'--jobs 1 (sequential) s':>24} {'--jobs 2 (concurrent) s':>24}")
    for load in ('idle', 'one competing process'):
        seconds = {r['jobs']: r['seconds'] for r in rows if r['load'] == load}
        out.say(f"{load:<22} {seconds[1]:>24.1f} {seconds[2]:>24.1f}")
    out.write(args.out)
    if args.json: args.json.write_text(json.dumps(out.record() | dict(rows=rows, steps=args.steps, cores=cores), indent=1))


if __name__ == '__main__': main()
