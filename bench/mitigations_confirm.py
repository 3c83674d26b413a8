"""Experiment 06's mitigations on the confirmation seeds (issue 55), as bench/plans/mitigations-confirm.json fixes them:
every mitigation on seeds 100-109 in both settings of `studies.STUDY_SETTINGS`, seed-batched, then one results file per
setting that records the plan's commit and each run's start time.

    python bench/mitigations_confirm.py show                     # the plan: settings, mitigations, seeds, directions
    python bench/mitigations_confirm.py train --out /tmp/mconf   # train what is missing (about 80 min on 2 cores)
    python bench/mitigations_confirm.py write --out /tmp/mconf   # measure every run, write the results files
    python bench/mitigations_confirm.py check                    # the results files against git (tests/test_plans.py)

`train` refuses while the plan file is uncommitted or changed since its commit (git could not prove the order), or
while the package's settings or mitigations differ from the plan's. It keeps DIR/plan_runs.json: the plan's path,
commit and SHA-256, and each run's start time (UTC, taken before its training was handed out to the workers, so never
later than the run's true start). A run whose folder says it completed is not trained again; a cut leaves whole
seeds. `write` reads every completed seed of every mitigation (a seed is used in a setting only where every mitigation
completed it) with `run_summaries.run_summary` and writes nbs/experiments/results/mitigations_confirm_cpu.json (the
demo setting) and mitigations_2-layers-x-4-heads_confirm_cpu.json.
"""
import argparse, json, os, platform, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plan_git import plan_problem, plan_state, results_problems, utc_now   # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PLAN = ROOT / 'bench' / 'plans' / 'mitigations-confirm.json'
RESULTS = ROOT / 'nbs' / 'experiments' / 'results'
RECORD = 'plan_runs.json'


def load_plan(path:Path=PLAN) -> dict:
    "The plan; SystemExit naming what differs where the package's settings or mitigations are not the plan's."
    from sink_nb.run_configs import MITIGATIONS
    from sink_nb.studies import STUDY_SETTINGS
    plan = json.loads(path.read_text())
    if plan['settings'] != {k: dict(v) for k, v in STUDY_SETTINGS.items()}:
        raise SystemExit(f"mitigations_confirm.py: the plan's settings {plan['settings']} are not "
                         f"studies.STUDY_SETTINGS {dict(STUDY_SETTINGS)}")
    if differ := [n for n, f in plan['mitigations'].items() if MITIGATIONS.get(n) != f]:
        raise SystemExit(f"mitigations_confirm.py: run_configs.MITIGATIONS differs from the plan for {differ}")
    return plan


def results_file(setting:str) -> Path:
    from sink_nb.studies import variant_folder
    return RESULTS / ('mitigations_confirm_cpu.json' if setting == 'demo' else
                      f'mitigations_{variant_folder(setting)}_confirm_cpu.json')


def run_folder(out:Path, setting:str, name:str, seed:int) -> Path:
    from sink_nb.studies import variant_folder
    return out / variant_folder(setting) / variant_folder(name) / f'seed{seed}'


def finished(path:Path) -> bool:
    from sink_nb.runs import Run
    return path.is_dir() and Run(path).is_run and Run(path).status.startswith('complete')


def show(plan:dict):
    print(f"plan {plan['name']} (issue {plan['issue']}): {plan['steps']} steps, seeds {plan['seeds']['values']}")
    for s, fields in plan['settings'].items(): print(f"setting {s!r}: {fields or 'the demo config'}")
    for n, fields in plan['mitigations'].items(): print(f"  {n:<11} {fields or '(plain softmax)'}")
    for c in plan['comparisons']:
        rhs = c['b'] if isinstance(c['b'], (int, float)) else f"{c['b'][0]} {c['b'][1]}"
        print(f"  {c['states']}{'' if 'margin' not in c else ' ±' + str(c['margin'])}  "
              f"{c['a'][0]} {c['a'][1]} vs {rhs}: {c['claim']}")


def batches(plan:dict) -> list[list[int]]:
    "The seeds in halves, in the plan's order (100-104, then 105-109)."
    seeds = plan['seeds']['values']
    return [seeds[:len(seeds) // 2], seeds[len(seeds) // 2:]]


def train(args, plan:dict):
    from sink_nb.run_configs import mitigation_config
    from sink_nb.studies import train_variants
    state = plan_state(PLAN)
    if why := plan_problem(state): raise SystemExit(f'mitigations_confirm.py train: {why}')
    path = args.out / RECORD
    record = json.loads(path.read_text()) if path.is_file() else dict(
        plan=dict(path=state['path'], commit=state['commit'], sha256=state['sha256']), runs=[])
    if record['plan'] != dict(path=state['path'], commit=state['commit'], sha256=state['sha256']):
        raise SystemExit(f"mitigations_confirm.py train: {path} records another plan commit: use another --out")
    t0 = time.time()
    for seeds in batches(plan):
        for setting, fields in plan['settings'].items():
            todo = {n: [s for s in seeds if not finished(run_folder(args.out, setting, n, s))]
                    for n in plan['mitigations']}
            todo = {n: s for n, s in todo.items() if s}
            if not todo: continue
            started = utc_now()
            for n, ss in todo.items():
                record['runs'] = [r for r in record['runs'] if (r['setting'], r['variant'], r['seed']) not in
                                  {(setting, n, s) for s in ss}] + [
                    dict(setting=setting, variant=n, seed=s, folder=str(run_folder(args.out, setting, n, s)),
                         started=started) for s in ss]
            args.out.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(record, indent=1) + '\n')      # before training: the start times stand
            print(f'{setting}: seeds {seeds}, {sum(map(len, todo.values()))} runs, after {time.time() - t0:.0f} s',
                  flush=True)
            out = run_folder(args.out, setting, 'x', 0).parent.parent
            whole = [n for n, ss in todo.items() if ss == seeds]          # one pool for them: a batch of seeds each
            groups = ([(whole, seeds)] if whole else []) + [([n], ss) for n, ss in todo.items() if n not in whole]
            for names, ss in groups:
                variants = {n: dict(config=mitigation_config(n), **fields) for n in names}
                train_variants(out, variants, ss, plan['steps'], args.jobs)
                print(f"  {', '.join(names)}: seeds {ss} done after {time.time() - t0:.0f} s", flush=True)


def write(args, plan:dict):
    "One results file per setting: every completed seed's run_summary row, with the plan and each run's start time."
    import torch
    from sink_nb.run_summaries import compare_runs
    if not (args.out / RECORD).is_file():
        raise SystemExit(f"mitigations_confirm.py write: --out {args.out} holds no {RECORD}: not a folder `train` wrote")
    record = json.loads((args.out / RECORD).read_text())
    started = {(r['setting'], r['variant'], r['seed']): r['started'] for r in record['runs']}
    torch.set_num_threads(args.threads)
    for setting in args.setting or plan['settings']:
        seeds = [s for s in plan['seeds']['values'] if all(finished(run_folder(args.out, setting, n, s))
                                                            for n in plan['mitigations'])]
        if not seeds: print(f'{setting}: no seed completed by every mitigation'); continue
        folders = [run_folder(args.out, setting, n, s) for n in plan['mitigations'] for s in seeds]
        rows = compare_runs(folders)
        for row, folder, (n, s) in zip(rows, folders, [(n, s) for n in plan['mitigations'] for s in seeds]):
            assert row['seed'] == s, (row['seed'], s)
            row.update(mitigation=n, setting=setting, started=started[(setting, n, s)],
                       run=folder.relative_to(args.out).as_posix())      # not the machine's path of the folder
        runs = [dict(setting=setting, variant=r['mitigation'], seed=r['seed'], started=r['started']) for r in rows]
        out = dict(plan=record['plan'], setting=setting, seeds=seeds, steps=plan['steps'], runs=runs, rows=rows,
                   command=f'python bench/mitigations_confirm.py write --out {args.out.name}',
                   machine=f'{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, '
                           f'torch {torch.__version__}', written=utc_now())
        results_file(setting).write_text(json.dumps(out, indent=1, default=float) + '\n')
        print(f'{setting}: {len(seeds)} seeds x {len(plan["mitigations"])} mitigations -> {results_file(setting)}')


def check(args, plan:dict):
    bad = 0
    for setting in plan['settings']:
        path = results_file(setting)
        if not path.is_file(): print(f'{path.name}: not written yet'); continue
        problems = results_problems(json.loads(path.read_text()))
        bad += len(problems)
        print(f"{path.name}: {'every run started after the plan commit' if not problems else '; '.join(problems)}")
    if bad: raise SystemExit(1)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('what', choices=('show', 'train', 'write', 'check'))
    p.add_argument('--out', type=Path, help='the folder of the runs and their record (train, write)')
    p.add_argument('--jobs', type=int, default=2, help='training processes (default 2)')
    p.add_argument('--threads', type=int, default=2, help='torch threads while measuring (write; default 2)')
    p.add_argument('--setting', nargs='+', help="write: only these settings (default: the plan's; one process each "
                                               "side by side halves the time)")
    args = p.parse_args(argv)
    if args.what in ('train', 'write') and args.out is None: p.error(f'{args.what} needs --out')
    if args.jobs < 1 or args.threads < 1: p.error('--jobs and --threads must be at least 1')
    plan = load_plan()
    if unknown := set(args.setting or ()) - set(plan['settings']):
        p.error(f"--setting {sorted(unknown)}: the plan's settings are {list(plan['settings'])}")
    {'show': show, 'train': train, 'write': write, 'check': check}[args.what](*(
        (plan,) if args.what == 'show' else (args, plan)))


if __name__ == '__main__':
    main()
