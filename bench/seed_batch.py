"""Seeds as one batch (`train.train_seeds`) against seeds trained alone, on this machine: the demo's confirmation seeds
(demo-softmax, 600 steps each) and steps of lang-4x128 (on bigram-backcopy rows, so no corpus is needed).

    python bench/seed_batch.py demo                  # 10 seeds x 600 steps, three ways (about 10 minutes on 2 cores)
    python bench/seed_batch.py lang --steps 20       # 4 seeds of lang-4x128, alone then batched
    python bench/seed_batch.py all --out bench/results/seed_batch_cpu.txt --json bench/results/seed_batch_cpu.json

Every way trains the same runs; the table says whether their final numbers are identical (they must be: a batch gives
each seed the numbers it has alone). It prints the machine, the torch version and the load average before and after.
"""
import argparse, json, os, tempfile, time
from pathlib import Path

import torch

from sink_nb.run_configs import load_run_config
from sink_nb.runs import Run
from sink_nb.studies import STUDY_SEEDS, train_variant, train_variant_seeds, train_variants, training_pool
from sink_nb.train import train, train_seeds
from bench_env import Output


def final_numbers(folders) -> list[tuple]:
    "(seed, step, val_loss, Sink_1) of each run's last evaluation: what every way must agree on."
    rows = []
    for folder in folders:
        run = Run(folder)
        last = run.metrics()[-1]
        rows.append((run.config.train.seed, last.step, last.val_loss, last.sink[1]))
    return sorted(rows)


def timed(fn) -> tuple[float, object]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def demo_alone_two_processes(out:Path, seeds, steps:int) -> list:
    "Each seed alone, two processes at once with one thread each: how studies trained before seed batches."
    args = [({}, s, steps, str(out / f'seed{s}'), 1) for s in seeds]
    with training_pool(2) as pool: return pool.starmap(train_variant, args)


def demo(steps:int, n_seeds:int) -> list[dict]:
    "The demo's confirmation seeds three ways; a row each."
    seeds = list(STUDY_SEEDS['confirmation'])[:n_seeds]
    cores = len(os.sched_getaffinity(0))
    ways = {
        'alone, 2 processes x 1 thread': lambda out: demo_alone_two_processes(out, seeds, steps),
        f'one batch, 1 process x {cores} threads':
            lambda out: train_variant_seeds({}, seeds, steps, [str(out / f'seed{s}') for s in seeds], cores),
        f'2 batches of {(n_seeds + 1) // 2}, 2 processes x 1 thread':
            lambda out: list(train_variants(out, {'demo': {}}, seeds, steps, jobs=2).values()),
    }
    rows, reference = [], None
    for way, fn in ways.items():
        with tempfile.TemporaryDirectory() as tmp:
            seconds, folders = timed(lambda: fn(Path(tmp)))
            numbers = final_numbers(folders)
        reference = reference or numbers
        rows.append(dict(task=f'demo-softmax, {n_seeds} seeds x {steps} steps', way=way, seconds=round(seconds, 1),
                         per_seed_step_ms=round(1000 * seconds / (n_seeds * steps), 2),
                         identical_to_first=numbers == reference))
        print(rows[-1], flush=True)
    return rows


def lang_configs(out:Path, seeds, steps:int) -> tuple:
    "lang-4x128 for `steps` steps on bigram-backcopy rows (its own corpus is not needed to time a step)."
    settings = dict(corpus='bigram-backcopy', tokenizer=None, corpus_args=dict(n=steps * 32 + 64), val_blocks=64,
                    steps=steps, eval_every=steps, checkpoint_every=steps, checkpoint_schedule='every', probe_n=16,
                    progress=False, warmup=2)
    model_cfg = load_run_config('lang-4x128', settings)[0]
    cfgs = [load_run_config('lang-4x128', settings | dict(seed=s, out_dir=str(out / f'seed{s}')))[1] for s in seeds]
    return model_cfg, cfgs


def lang(steps:int, n_seeds:int) -> list[dict]:
    "lang-4x128 seeds alone (one after another, every thread) and as one batch; a row each."
    rows, reference = [], None
    seeds = list(range(n_seeds))
    for way in ('alone, one after another', 'one batch'):
        with tempfile.TemporaryDirectory() as tmp:
            model_cfg, cfgs = lang_configs(Path(tmp), seeds, steps)
            if way == 'one batch': seconds, folders = timed(lambda: train_seeds(model_cfg, cfgs))
            else: seconds, folders = timed(lambda: [train(model_cfg, cfg) for cfg in cfgs])
            numbers = final_numbers(folders)
        reference = reference or numbers
        rows.append(dict(task=f'lang-4x128 ({cfgs[0].dtype}), {n_seeds} seeds x {steps} steps', way=way,
                         seconds=round(seconds, 1), per_seed_step_ms=round(1000 * seconds / (n_seeds * steps), 1),
                         identical_to_first=numbers == reference))
        print(rows[-1], flush=True)
    return rows


def table(rows:list[dict], head:str) -> str:
    lines = [head, f"{'task':<40} {'way':<42} {'seconds':>8} {'ms/seed-step':>13} {'same numbers':>13}"]
    for r in rows:
        lines.append(f"{r['task']:<40} {r['way']:<42} {r['seconds']:>8.1f} {r['per_seed_step_ms']:>13} "
                     f"{'yes' if r['identical_to_first'] else 'NO':>13}")
    return '\n'.join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('what', choices=('demo', 'lang', 'all'))
    p.add_argument('--steps', type=int, default=None, help='demo: 600; lang: 20')
    p.add_argument('--seeds', type=int, default=None, help='demo: 10; lang: 4')
    p.add_argument('--out', type=Path, help='write the table here')
    p.add_argument('--json', type=Path, help='write the rows here')
    args = p.parse_args(argv)
    for flag in ('steps', 'seeds'):
        if getattr(args, flag) is not None and getattr(args, flag) < 1: p.error(f"--{flag} must be at least 1")
    out = Output('seed_batch.py', argv)
    rows = []
    if args.what in ('demo', 'all'): rows += demo(args.steps or 600, args.seeds or 10)
    if args.what in ('lang', 'all'): rows += lang(args.steps or 20, args.seeds or 4)
    head = f"seed batches on {len(os.sched_getaffinity(0))} cores, torch {torch.__version__}"
    for line in table(rows, head).splitlines(): out.say(line)
    out.write(args.out)
    if args.json: args.json.write_text(json.dumps(out.record() | dict(head=head, rows=rows), indent=1) + '\n')

if __name__ == '__main__': main()
