"""The language study's plan for a GPU (issue 53): show it, list or run its jobs in the plan's order, and check that
every run started after the commit that fixed the plan.

    python bench/language_plan.py show                                   # cells, seeds, read points, directions
    python bench/language_plan.py runs --out runs/lang-plan              # the jobs in order (--dry-run, the default)
    python bench/language_plan.py runs --out runs/lang-plan --no-dry-run --stages 1 \
        --corpus-overrides corpus=SHARDS tokenizer=null                  # the first GPU call: the 2x2 to 32.8M
    python bench/language_plan.py runs --out /tmp/plan-rehearsal --tiny --no-dry-run   # every cell, 2 seeds, on CPU
    python bench/language_plan.py check --out runs/lang-plan             # every run started after the plan's commit

The plan is bench/plans/language-2x2.json, fixed before any run: `runs` refuses to train while that file is not
committed or has uncommitted changes (git could not prove the order), and writes DIR/plan_runs.json with the plan's
path, SHA-256 and commit, and each run's start time. `--uncommitted-rehearsal` skips the commit requirement for a
rehearsal, marks the record `"rehearsal": true`, and `check` refuses it as evidence.
"""
import argparse, json, os, sys, time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from plan_git import commit_facts, plan_problem, plan_state, utc_now   # noqa: E402

PLAN = Path(__file__).resolve().parent / 'plans' / 'language-2x2.json'
RECORD = 'plan_runs.json'
# where a machine keeps the corpus: the only overrides a run may add to its cell's (the plan's `runtime_overrides`)
CORPUS_KEYS = ('corpus', 'tokenizer', 'corpus_args', 'data_dir')
# The rehearsal: every cell on CPU in seconds, on the built-in bigram-backcopy corpus (no network, no debian-docs), with
# a one-layer model; fp32 because a CPU without native bf16 runs lang-4x128's bf16 about 50 times slower, and the
# rehearsal checks the plumbing (order, folders, resumes, the record), not Sink_1.
TINY = ['corpus=bigram-backcopy', 'tokenizer=null', 'corpus_args={}', 'n_layer=1', 'n_embd=32', 'n_head=2', 'd_ff=64',
        'vocab_size=64', 'block_size=64', 'seq_len=32', 'batch_size=2', 'probe_T=32', 'probe_n=4', 'val_blocks=8',
        'eval_batches=1', 'eval_every=2', 'checkpoint_every=2', 'dtype=fp32']
TINY_SEEDS = 2
TINY_STEPS_PER_READ_POINT = 2        # read point i (0-based) becomes step 2 (i + 1): 2 and 4, each an evaluation
PLAN_KEYS = ('config', 'tokens_per_step', 'seeds', 'cells', 'read_points', 'comparisons', 'tests', 'run_order')


def load_plan(path:Path) -> dict:
    "The plan file as a dict; one clear line if it cannot be read or lacks a section this script reads."
    try: plan = json.loads(path.read_text())
    except (OSError, ValueError) as e: raise SystemExit(f'language_plan.py: error: --plan {path}: {e}')
    if missing := [k for k in PLAN_KEYS if k not in plan]:
        raise SystemExit(f"language_plan.py: error: --plan {path} has no {', '.join(missing)}: not a plan this reads")
    return plan


def show(args, plan:dict):
    "The plan as tables: cells, seeds, read points, comparisons and the run order."
    print(f"plan {plan['name']}: config {plan['config']}, {plan['tokens_per_step']:,} tokens a step")
    print(f"seeds ({len(plan['seeds']['values'])} per cell, {plan['seeds']['role'].split(':')[0]}): "
          f"{', '.join(map(str, plan['seeds']['values']))}")
    print(f"\n{'cell':<15}{'layout':<11}{'operation':<17}overrides")
    for c in plan['cells']:
        print(f"{c['name']:<15}{c['layout']:<11}{c['operation']:<17}{' '.join(c['overrides']) or '-'}")
    print(f"\n{'read point':<12}{'tokens':>13}{'step':>7}")
    for r in plan['read_points']: print(f"{r['name']:<12}{r['tokens']:>13,}{r['step']:>7,}")
    print(f"\n{'comparison':<17}{'higher':<15}{'lower':<15}{'paper (Sink1 %)'}")
    for c in plan['comparisons']:
        star = ' (headline)' if c.get('headline') else ' (gated)' if c.get('gate') else ''
        print(f"{c['name']:<17}{c['higher']:<15}{c['lower']:<15}{', '.join(c['paper']['numbers'])}{star}")
    tests = plan['tests']
    print(f"\ntests: {tests['kind']}; Holm over m = {tests['m']}, alpha {tests['alpha']}")
    for s in plan['run_order']['stages']:
        print(f"stage {s['stage']}: {len(s['cells'])} cells to step {s['until_step']:,}: {', '.join(s['cells'])}")


def plan_jobs(plan:dict, out:Path, tiny:bool, corpus_overrides:list[str], stages:list[int]) -> list[dict]:
    "The plan's jobs in its order: stage by stage, seed-major in a stage; `batches` trains each cell's seeds as one."
    cells = {c['name']: c for c in plan['cells']}
    seeds = plan['seeds']['values'][:TINY_SEEDS] if tiny else plan['seeds']['values']
    tiny_step = {r['step']: TINY_STEPS_PER_READ_POINT * (i + 1) for i, r in enumerate(plan['read_points'])}
    extra = TINY if tiny else corpus_overrides
    jobs = []
    for stage in plan['run_order']['stages']:
        if stage['stage'] not in stages: continue
        steps = tiny_step[stage['until_step']] if tiny else stage['until_step']
        for seed in seeds:
            for name in stage['cells']:
                jobs.append(dict(stage=stage['stage'], cell=name, seed=seed, steps=steps, config=plan['config'],
                                 overrides=[*cells[name]['overrides'], *extra], folder=str(out / name / f'seed{seed}')))
    return jobs


def with_run_settings(job:dict) -> dict:
    "The job with the settings of this run on this machine: seed, step, folder, and resuming if the folder holds a run."
    # resume=true for every run of a batch (a seed batch's runs differ only in seed and folder): a folder that holds no
    # run starts one; a later stage extends a run, and its log records the change of steps
    run = [f"seed={job['seed']}", f"steps={job['steps']}", f"out_dir={job['folder']}", 'resume=true',
           'allow_changes=[steps]', 'progress=false']
    return job | dict(overrides=[*job['overrides'], *run])


def train_batch(jobs:list[dict]) -> list[Path]:
    "Train the jobs of one cell and stage (`overrides` complete; they differ in seed and folder) as one seed batch."
    import warnings
    from sink_nb.run_configs import load_run_config
    from sink_nb.train import train_seeds
    configs = [load_run_config(job['config'], job['overrides']) for job in jobs]
    with warnings.catch_warnings():
        warnings.filterwarnings('ignore', message='.*holds no run to resume')     # a first stage starts its runs
        return train_seeds(configs[0][0], [cfg for _, cfg, _ in configs])


def train_cell(batch:list[dict], threads:int|None) -> list[str]:
    "One process's work: one cell's seed batch, on `threads` threads (None: torch's default)."
    if threads: set_threads(threads)
    return [str(p) for p in train_batch(batch)]


def train_at_once(cells:list[list[dict]], threads:int|None):
    "Every cell's seed batch at once, a process each (spawned: a GPU is shared by processes, never by a fork)."
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    with ProcessPoolExecutor(len(cells), mp_context=multiprocessing.get_context('spawn')) as pool:
        for done in [pool.submit(train_cell, batch, threads) for batch in cells]: done.result()


def batches(jobs:list[dict]) -> list[list[dict]]:
    "The jobs as seed batches, one per stage and cell, in the plan's order of stages and of cells within a stage."
    grouped = {}
    for job in jobs: grouped.setdefault((job['stage'], job['cell']), []).append(job)
    return list(grouped.values())


def device_name() -> str:
    "The device the runs train on, as the record names it (CPU and GPU runs are never pooled)."
    import torch
    return f'cuda: {torch.cuda.get_device_name()}' if torch.cuda.is_available() else 'cpu'


def set_threads(n:int):
    "Train on `n` CPU threads."
    import torch
    torch.set_num_threads(n)


def save_record(record:dict, out:Path):
    "Write the record whole or not at all: a call stopped at its time limit leaves the last complete one."
    tmp = out / f'{RECORD}.tmp'
    tmp.write_text(json.dumps(record, indent=2) + '\n')
    tmp.replace(out / RECORD)


def new_record(args, state:dict, commit:str|None) -> dict:
    "The record's head: which plan (path, SHA-256, commit), whether it is evidence, and the device."
    return dict(plan=state['path'], plan_sha256=state['sha256'], plan_commit=commit,
                plan_commit_from='--plan-commit' if args.plan_commit else 'git log' if commit else None,
                rehearsal=args.uncommitted_rehearsal, tiny=args.tiny, device=device_name(),
                command='python bench/language_plan.py ' + ' '.join(sys.argv[1:]), runs=[])


def open_record(args, state:dict, commit:str|None) -> dict:
    "A new record, or the folder's own when it holds runs of the same plan, kind and device (its runs go on)."
    record = new_record(args, state, commit)
    if not (args.out / RECORD).exists(): return record
    old = json.loads((args.out / RECORD).read_text())
    same = ('plan', 'plan_sha256', 'plan_commit', 'rehearsal', 'tiny', 'device')
    if differ := [k for k in same if old.get(k) != record[k]]:
        raise SystemExit(f"language_plan.py: error: --out {args.out} holds runs whose {', '.join(differ)} differ from "
                         f"this call's ({', '.join(f'{k}={old.get(k)!r}' for k in differ)}); give a folder of its own")
    return old


def resolve_commit(args, state:dict) -> str|None:
    "The plan's commit, after refusing what git cannot prove (None only in a rehearsal of an uncommitted plan)."
    problem = plan_problem(state)
    if args.plan_commit and state['root'] is None: return args.plan_commit     # no git here: `check` proves it later
    if args.plan_commit and args.plan_commit != state['commit']:
        raise SystemExit(f"language_plan.py: error: --plan-commit {args.plan_commit} is not the plan's last commit "
                         f"here ({state['commit']})")
    if problem and args.uncommitted_rehearsal: return state['commit']
    if problem: raise SystemExit(f"language_plan.py: error: refusing to run: {problem}; git could not prove that the "
                                 "plan came before its runs (a rehearsal may pass --uncommitted-rehearsal)")
    return state['commit']


def runs(args, plan:dict):
    "Print the jobs in the plan's order; with --no-dry-run train them, recording each start time in DIR/plan_runs.json."
    jobs = plan_jobs(plan, args.out.absolute(), args.tiny, args.corpus_overrides, args.stages)
    state = plan_state(args.plan)
    if args.dry_run:
        print(f"plan {state['path']} sha256 {state['sha256'][:12]} commit {state['commit'] or '-'}: "
              f"{plan_problem(state) or 'committed, clean'}")
        for j in jobs: print(f"stage {j['stage']} {j['cell']:<14} seed {j['seed']} to step {j['steps']:>5,}  "
                             f"{j['folder']}  {' '.join(j['overrides']) or '-'}")
        return print(f"{len(jobs)} jobs (a dry run: nothing trained; --no-dry-run trains them)")
    commit = resolve_commit(args, state)
    args.out.mkdir(parents=True, exist_ok=True)
    record = open_record(args, state, commit)
    done = {(r['stage'], r['cell'], r['seed']) for r in record['runs'] if r.get('finished')}
    pending = [with_run_settings(j) for j in jobs if (j['stage'], j['cell'], j['seed']) not in done]   # goes on
    for stage in sorted({job['stage'] for job in pending}):
        cells = batches([job for job in pending if job['stage'] == stage])
        entries = [[dict(cell=job['cell'], seed=job['seed'], stage=job['stage'], steps=job['steps'],
                         overrides=job['overrides'], folder=job['folder'], started=utc_now(), finished=None)
                    for job in batch] for batch in cells]
        for cell_entries in entries: record['runs'].extend(cell_entries)
        save_record(record, args.out)                    # the start times are on disk before training begins
        t0 = time.time()
        train_at_once(cells, 1 if args.tiny else None)
        for entry in [e for cell_entries in entries for e in cell_entries]: entry['finished'] = utc_now()
        save_record(record, args.out)
        print(f"stage {stage}: {len(cells)} cells x {len(cells[0])} seeds to step {cells[0][0]['steps']:,}: "
              f"{time.time() - t0:.1f} s", flush=True)
    print(f"wrote {args.out / RECORD}: {len(record['runs'])} runs")


def fail(why:str):
    "Stop `check` with one line that says why (exit status 1)."
    sys.exit(f'language_plan.py check: {why}')


def check(args, plan:dict):
    "Every run started after the plan's commit, whose plan file is the one the record names by SHA-256."
    try: record = json.loads((args.out / RECORD).read_text())
    except (OSError, ValueError) as e: fail(f'--out {args.out}: no readable {RECORD} ({type(e).__name__}: {e})')
    if record.get('rehearsal'): fail(f'{args.out / RECORD} is a rehearsal (--uncommitted-rehearsal): not evidence '
                                     'that the plan came before its runs')
    state = plan_state(args.plan)
    if state['root'] is None: fail(f'--plan {args.plan} is in no git repository: nothing can prove the order')
    if record.get('plan') != state['path']: fail(f"the record's plan is {record.get('plan')!r}, not {state['path']!r}")
    if not record.get('plan_commit'): fail('the record names no plan commit')
    facts = commit_facts(Path(state['root']), record['plan_commit'], state['path'])
    if isinstance(facts, str): fail(facts)
    committed, sha = facts
    if sha != record.get('plan_sha256'):
        fail(f"the recorded SHA-256 {record.get('plan_sha256')} is not the plan's at {record['plan_commit']} ({sha})")
    if state['commit'] != record['plan_commit']:      # a plan changed after its runs is not the plan they ran under
        fail(f"the plan was changed after the runs' commit {record['plan_commit']} (last change {state['commit']})")
    if not record.get('runs'): fail(f'{args.out / RECORD} records no runs')
    print(f"plan {state['path']} at {record['plan_commit'][:12]}, committed {committed.isoformat()}, sha256 matches")
    early = []
    for r in record['runs']:
        started = datetime.fromisoformat(r['started'])
        ok = started > committed
        if not ok: early.append(r)
        print(f"{'ok' if ok else 'BEFORE THE PLAN'}  stage {r['stage']} {r['cell']} seed {r['seed']} started "
              f"{r['started']} ({(started - committed).total_seconds():+.0f} s)")
    if record.get('tiny'): print('note: tiny runs (a rehearsal of the plumbing), not the plan\'s runs')
    if early: fail(f"{len(early)} run(s) started before the plan's commit, first {early[0]['cell']} seed "
                   f"{early[0]['seed']} stage {early[0]['stage']} at {early[0]['started']}")


def commit_hash(text:str) -> str:
    "argparse type: a full commit hash (40 hex digits), as `git log -1 --format=%H` prints it."
    if len(text) != 40 or any(ch not in '0123456789abcdef' for ch in text):
        raise argparse.ArgumentTypeError(f'{text!r} is not a full commit hash (40 lowercase hex digits)')
    return text


def key_value(text:str) -> str:
    "argparse type: one corpus location override, key=value with a key of CORPUS_KEYS."
    key = text.split('=', 1)[0]
    if '=' not in text or key not in CORPUS_KEYS:
        raise argparse.ArgumentTypeError(f"{text!r}: give key=value with key one of {', '.join(CORPUS_KEYS)} (where "
                                         "the corpus lies; a cell's settings are the plan's)")
    return text


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('what', choices=('show', 'runs', 'check'))
    p.add_argument('--plan', type=Path, default=PLAN, help='the plan file (default: bench/plans/language-2x2.json)')
    p.add_argument('--out', type=Path, help='runs, check: the folder of the runs and their plan_runs.json')
    p.add_argument('--dry-run', action=argparse.BooleanOptionalAction, default=True,
                   help='runs: only print the jobs (the default); --no-dry-run trains them')
    p.add_argument('--tiny', action='store_true', help=f'runs: rehearse on CPU, every cell, {TINY_SEEDS} seeds, a tiny '
                                                       'model on the built-in bigram-backcopy corpus')
    p.add_argument('--stages', type=int, nargs='+', help="runs: only these stages of the plan's order (default: all)")
    p.add_argument('--corpus-overrides', type=key_value, nargs='+', default=[],
                   help=f"runs: where the corpus lies on this machine ({', '.join(CORPUS_KEYS)}=...)")
    p.add_argument('--uncommitted-rehearsal', action='store_true',
                   help='runs: train although the plan is not committed; the record says rehearsal, check refuses it')
    p.add_argument('--plan-commit', type=commit_hash,
                   help="runs: the plan's commit, on a machine whose copy has no git history (check proves it later)")
    args = p.parse_args(argv)
    plan = load_plan(args.plan)
    allowed = [s['stage'] for s in plan['run_order']['stages']]
    args.stages = args.stages or allowed
    if bad := [s for s in args.stages if s not in allowed]:
        p.error(f"--stages {' '.join(map(str, bad))}: the plan's stages are {', '.join(map(str, allowed))}")
    if args.what in ('runs', 'check') and args.out is None:
        p.error(f'--out: {args.what} needs the folder of the runs')
    if args.what == 'check' and not (args.out / RECORD).is_file(): p.error(f'--out {args.out}: holds no {RECORD}')
    if args.out is not None and (args.out / 'config.yaml').exists():
        p.error(f'--out {args.out} is a run folder; give the folder that holds the cells')
    if args.tiny and args.corpus_overrides:
        p.error('--corpus-overrides: --tiny trains on the built-in bigram-backcopy corpus; give one or the other')
    os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')       # the tiny runs' threads do not spin on a shared CPU
    dict(show=show, runs=runs, check=check)[args.what](args, plan)


if __name__ == '__main__':
    main()
