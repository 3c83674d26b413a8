"""A sink on language at CPU scale: the pilot that fixes the learning rate, then the natural-text series — three model
sizes x three seeds on the debian-docs corpus, resumable, two runs at once with one thread each.

    sink-nb corpus debian-docs                                       # the corpus and its tokenizer (about 4 minutes)
    python bench/language_series.py pilot --out runs/lang-pilot      # 3 learning rates x 500 steps of lang-4x128
    python bench/language_series.py series --out runs/lang --steps 12500   # resumes every run that is there
    python bench/language_series.py status --out runs/lang           # steps, tokens and Sink_1 of every run so far
    python bench/language_series.py knobs --out runs/lang-knobs      # learning rate, weight decay, sigmoid, no BOS
    python bench/language_series.py stages --out runs/lang --knobs-out runs/lang-knobs   # what is left, stage by stage

The plan (sizes, seeds, schedule, budget and the pilot's rule) is fixed here and in the lang-* configs before any run of
the series; `experiments/10_sinks_on_language` reads what the runs wrote. Runs are seed-major within a size, smallest
size first, so a stop leaves whole seeds of the smallest size rather than one seed of every size.

The runs take about 30 hours of this 2-core machine and go in sessions of under 3 hours, so they go in stages (`--until`),
in this order, fixed when lang-4x128 seeds 0 and 1 stood at step 5,000 and before any other run: (1) every series run
to step 4,000 (32.8M tokens, the knobs' step), smallest size first; (2) the knobs; (3) every series run to the full
12,500 steps. The stages order when runs start (a core freed before a stage ends takes the next stage's first run);
the sizes, seeds, budget and knobs are the ones fixed above.

On the GPU (fixed 2026-11-27, session I, before any GPU run): the machine that held the CPU runs' checkpoints was
replaced between sessions, so the stages cannot resume; what the CPU runs measured survives in
nbs/experiments/results/language_*_cpu.json (stage 1 complete, three knob runs). A session lent an H200 runs the whole
plan there from step 0 — the same configs, seeds, budget and knobs, in bf16 autocast as on the CPU — with
`bash .ci/gpu language`: every run at once, stopped at a time limit. The corpus is rebuilt by `sink-nb corpus
debian-docs` on the new machine, whose Debian mirror serves nine of the 51 packages at other versions (157.017 MB of
text against 157.082; another tokenizer, trained the same way): prepared here, carried as shards, its card saved beside
the results. Its runs then decide the plan's verdicts (sizes at the full budget or as far as they got, knobs paired with
the GPU's own lang-4x128 runs, never with the CPU's), and the CPU's stage 1 is set beside them as a check across
machines: the same seeds' onsets on two devices and two builds of the corpus.
"""
import argparse, json, multiprocessing, os, shutil, sys, time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, as_completed, wait
from pathlib import Path

SIZES = ('lang-4x128', 'lang-6x128', 'lang-6x192')    # configs in sink_nb/configs; smallest first
SERIES_SEEDS = (0, 1, 2)
PILOT_LRS = (1e-3, 3e-3, 1e-2)                          # rule: the lowest validation loss at step PILOT_STEPS wins
PILOT_STEPS, PILOT_SEED = 500, 99                       # the pilot's seed is none of the series'
# The pilot runs the smallest size only. lang-6x128 (the same width) takes its learning rate; lang-6x192 takes it times
# 128/192, Adam's learning rate scaled inversely with width. Fixed here before the pilot ran.
TOKENS_PER_STEP = 32 * 256
# The knobs of experiments 01-04 on language, at the smallest size where the series shows a sink forming (lang-4x128:
# Sink_1 past 10 % near 10-20M tokens in seeds 0 and 1). Fixed here before any knob run: each variant is lang-4x128 with
# the overrides below, seeds 0-2 as the series, KNOB_STEPS steps; each is compared with the series' lang-4x128 run of
# the same seed at step KNOB_STEPS (a checkpoint of the series), paired by seed.
KNOBS = {
    'lr-0.003': dict(overrides=['lr=0.003', 'min_lr=0.003'], about='a smaller learning rate (experiment 01)',
                     paper=('<', 'learning rate 4e-4 → 2e-4: Sink₁ 18.18 → 11.21 %'),
                     toy=dict(study='optimization', knob='lr=0.003', base='lr=0.01 (demo)')),
    'wd-0.5': dict(overrides=['weight_decay=0.5'], about='a larger weight decay (experiment 03)',
                   paper=('>', 'weight decay 0.1 → 0.5: Sink₁ 18.18 → 41.08 %'),
                   toy=dict(study='loss', knob='wd=0.5', base='wd=0.1 (demo)')),
    'sigmoid': dict(overrides=['attention=sigmoid', 'normalize=false'],
                    about='sigmoid attention without normalisation (experiment 04)',
                    paper=('<', 'softmax → sigmoid without normalisation: Sink₁ 18.18 → 0.44 % (proxy)'),
                    toy=dict(study='architecture', knob='sigmoid, no norm', base='softmax (demo)')),
    'no-bos': dict(overrides=['fixed_token=null'], about="packed text, no BOS: the paper's own setting (experiment 02)",
                   paper=('<', 'a fixed token at position 1 → none (the default): Sink₁ 74.11 → 18.18 %'),
                   toy=dict(study='data', knob='random x1', base='BOS first (demo)')),
}
# `paper`: the direction of Sink₁ when the knob is turned in Gu et al.'s 60M-parameter runs on the Pile, and their
# numbers (../shared/paper.md), written beside each knob before any knob run. `toy`: the same change in the demo task's
# CPU study (a studies.CPU_STUDIES name, the knob's variant and its base), whose confirmation seeds experiment 10 sets
# beside each knob (added before any knob run). Three paired seeds cannot resolve a direction (the smallest two-sided
# sign-flip p is 2/2^3 = 0.25), so the notebook sets the per-seed differences beside the paper's direction and the
# toy's, and tests none.
KNOB_STEPS = 4000                                        # 32.8M tokens, past the series' onsets


def corpus_overrides(corpus:Path|None, data_dir:Path|None, prepared:Path|None=None) -> list[str]:
    """key=value overrides that point the configs at a corpus built elsewhere than ~/.cache/sink_nb/corpora/debian-docs,
    or at its shards already prepared (`prepared`: the folder `data_dir` holds after a run read the corpus; a machine
    that gets the shards without the corpus's 157 MB of text, such as a lent GPU, trains on the same tokens)."""
    if prepared is not None:
        if not (prepared / 'meta.json').is_file(): raise SystemExit(f'--prepared: {prepared} holds no meta.json of '
                                                                   'prepared shards')
        return [f'corpus={prepared.expanduser().resolve()}', 'tokenizer=null']
    out = []
    if corpus is not None:
        c = corpus.expanduser().resolve()
        out += [f'corpus={c / "train.jsonl"}', f'tokenizer={c / "tokenizer"}',
                f'corpus_args={json.dumps(dict(val_split=str(c / "heldout.jsonl")))}']
    if data_dir is not None: out.append(f'data_dir={data_dir.expanduser().resolve()}')
    return out


def train_one(job:dict) -> dict:
    "Train (or resume) one run in this process with one thread; its final log row."
    import torch
    torch.set_num_threads(job['threads'])
    from sink_nb.run_configs import load_run_config
    from sink_nb.train import train
    out = Path(job['out_dir'])
    fresh, resume = not out.exists(), (out / 'config.yaml').exists()
    overrides = [*job['overrides'], f"seed={job['seed']}", f"steps={job['steps']}", f"out_dir={out}",
                 f"resume={str(resume).lower()}", 'progress=false']
    if resume: overrides.append('allow_changes=[steps]')
    model_cfg, cfg, _ = load_run_config(job['config'], overrides)
    t0 = time.time()
    try: train(model_cfg, cfg)
    except BaseException:                  # a new run that failed before its first checkpoint leaves no skeleton
        if fresh and not any((out / 'checkpoints').glob('step-*')): shutil.rmtree(out, ignore_errors=True)
        raise
    return dict(config=job['config'], seed=job['seed'], out_dir=str(out), seconds=round(time.time() - t0, 1),
                resumed=resume)


def next_job(queue:list[dict], running:list[dict]) -> int|None:
    """The index of the first queued job that can start now: none earlier in the queue or running trains its folder
    (a run in two stages goes in order); None if every job left must wait."""
    held = {j['out_dir'] for j in running}
    for i, job in enumerate(queue):
        if job['out_dir'] not in held: return i
        held.add(job['out_dir'])
    return None


def run_jobs(jobs:list[dict], n:int):
    """Run `jobs` in their order, `n` at a time, each printing one line when done. A worker that comes free takes the
    next job that can start (`next_job`), so the last job of a stage does not leave a core idle."""
    queue, running = list(jobs), {}
    if not jobs: print('every run is already at the step asked for: nothing to train', flush=True)
    # spawned, not forked: a worker that trains on a GPU must not inherit this process's state (CUDA refuses a
    # forked child once the parent has touched it)
    with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context('spawn')) as ex:
        while queue or running:
            while len(running) < n and (i := next_job(queue, list(running.values()))) is not None:
                job = queue.pop(i); running[ex.submit(train_one, job)] = job
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                job = running.pop(future)
                try: r = future.result()
                except Exception as e:                  # one line naming the run; the runs still going finish first
                    why = ' '.join(f'{type(e).__name__}: {e}'.split())
                    raise SystemExit(f"language_series.py: error: {job['config']} seed {job['seed']} in "
                                     f"{job['out_dir']} failed: {why}") from None
                print(f"{r['config']} seed {r['seed']}: {r['seconds']:.0f} s{' (resumed)' if r['resumed'] else ''} "
                      f"-> {r['out_dir']}", flush=True)


def last_row(run:Path) -> dict|None:
    "The last evaluation of a run as the run layer reads its log (None: none yet)."
    from sink_nb.runs import Run
    evaluations = Run(run).metrics() if (run / 'config.yaml').exists() else []
    return evaluations[-1]._asdict() if evaluations else None


def pilot(args):
    jobs = [dict(config=SIZES[0], seed=PILOT_SEED, steps=PILOT_STEPS, threads=1, out_dir=str(args.out / f'lr-{lr:g}'),
                 overrides=[*corpus_overrides(args.corpus, args.data_dir, args.prepared), f'lr={lr}', f'min_lr={lr}']) for lr in PILOT_LRS]
    t0 = time.time(); run_jobs(jobs, args.jobs)
    rows = {lr: last_row(args.out / f'lr-{lr:g}') for lr in PILOT_LRS}
    best = min(PILOT_LRS, key=lambda lr: rows[lr]['val_loss'])
    result = dict(command='python bench/language_series.py ' + ' '.join(sys.argv[1:]), config=SIZES[0], seed=PILOT_SEED,
                  steps=PILOT_STEPS, tokens=PILOT_STEPS * TOKENS_PER_STEP, rule='lowest validation loss at the last step',
                  rows={f'{lr:g}': rows[lr] for lr in PILOT_LRS}, chosen_lr=best, seconds=round(time.time() - t0))
    for lr in PILOT_LRS: print(f"lr {lr:g}: validation loss {rows[lr]['val_loss']:.4f} at step {rows[lr]['step']}")
    print(f"chosen: lr {best:g}")
    if args.json: Path(args.json).write_text(json.dumps(result, indent=1) + '\n')


def last_checkpoint(out_dir:str) -> int:
    "The step of a run's newest checkpoint (0: no run there yet)."
    from sink_nb.runs import Run
    run = Run(out_dir)
    return max(run.checkpoints, default=0) if (run.path / 'config.yaml').exists() else 0


def staged(jobs:list[dict], until:int|None) -> list[dict]:
    """`jobs` trained only to step `until` for now (a stage of the plan), leaving out runs already there. The learning
    rate is constant after warm-up, so a run stopped at a stage and resumed later to the full budget trains as one
    run would; the change of `steps` is recorded in the run's log."""
    if until is None: return jobs
    return [dict(j, steps=min(until, j['steps'])) for j in jobs if last_checkpoint(j['out_dir']) < min(until, j['steps'])]


def series_jobs(args, out:Path) -> list[dict]:
    "Every series run in `out`, to --steps, smallest size first and seed-major within a size."
    return [dict(config=c, seed=s, steps=args.steps, threads=1, out_dir=str(out / f'{c}-seed{s}'),
                 overrides=corpus_overrides(args.corpus, args.data_dir, args.prepared))
            for c in args.sizes or SIZES for s in SERIES_SEEDS]


def knob_jobs(args, out:Path) -> list[dict]:
    "Every knob variant of lang-4x128 on the series' seeds in `out`, to KNOB_STEPS."
    return [dict(config=SIZES[0], seed=s, steps=KNOB_STEPS, threads=1, out_dir=str(out / f'{name}-seed{s}'),
                 overrides=[*corpus_overrides(args.corpus, args.data_dir, args.prepared), *knob['overrides'],
                            f'name=lang-4x128-{name}'])
            for s in SERIES_SEEDS for name, knob in KNOBS.items()]


def series(args): run_jobs(staged(series_jobs(args, args.out), args.until), args.jobs)


def knobs(args):
    "Train every knob variant of lang-4x128 on the series' seeds (resumable), two at a time."
    run_jobs(staged(knob_jobs(args, args.out), args.until), args.jobs)


def stage_plan(args) -> list[tuple[str, list[dict]]]:
    """The plan's three stages in their fixed order, each leaving out what is already done: (1) every series run to
    KNOB_STEPS, (2) the knobs (in --knobs-out), (3) every series run to --steps."""
    return [('1: series to step %d' % KNOB_STEPS, staged(series_jobs(args, args.out), KNOB_STEPS)),
            ('2: knobs', staged(knob_jobs(args, args.knobs_out), KNOB_STEPS)),
            ('3: series to step %d' % args.steps, staged(series_jobs(args, args.out), args.steps))]


def stages(args):
    """Run what is left of the three stages, in order, so that one command carries the plan from session to session.
    The stages form one queue: a core freed near the end of a stage starts the next stage's first job, and a run's
    later stage waits for its earlier one (`next_job`)."""
    plan = stage_plan(args)
    for name, jobs in plan: print(f"stage {name}: {len(jobs)} runs to go", flush=True)
    run_jobs([job for _, jobs in plan for job in jobs], args.jobs)


def status(args):
    for run in sorted(p for p in args.out.iterdir() if p.is_dir()):
        r = last_row(run)
        if r is None: print(f"{run.name}: no evaluation yet"); continue
        print(f"{run.name}: step {r['step']:,} ({r['tokens'] / 1e6:.1f}M tokens) val loss "
              f"{r['val_loss']:.3f} Sink_1 {r['sink'][1]:.2f} %")


LOW_EPS = 0.1


def run_summary(folder:Path, progress:bool, threads:int|None=None) -> dict:
    "One run: its settings, evaluations, resumes, CPU time and the trajectory of its checkpoints at eps 0.3 and 0.1."
    if threads: import torch; torch.set_num_threads(threads)
    from sink_nb.metrics import uniform_first_alpha
    from sink_nb.runs import Run
    from sink_nb.trajectory import trajectory
    run = Run(folder)
    cfg = run.config
    evals = [dict(step=e.step, tokens=e.tokens, val_loss=round(e.val_loss, 4), loss=e.loss and round(e.loss, 4),
                  sink1=e.sink[1], time=e.time) for e in run.metrics()]
    try: main, low = (trajectory(folder, eps=eps, progress=progress) for eps in (cfg.train.eps, LOW_EPS))
    except ValueError as e:                          # a run just started: fewer than two checkpoints to measure
        if 'checkpoint' not in str(e): raise
        main = low = None
    at_low = {} if low is None else {r['step']: r['sink1'] for r in low.rows}   # a training run may add one between
    rows = [] if main is None else [{k: v for k, v in a.items() if k not in ('source', 'revision', 'heads')}
                                    | dict(sink1_low_eps=at_low[a['step']]) for a in main.rows if a['step'] in at_low]
    last = max([(e['step'], e['tokens']) for e in evals] + [(r['step'], r['tokens']) for r in rows] or [(0, 0)])
    return dict(name=folder.name, config=cfg.model.name, seed=cfg.train.seed, status=run.status,
                params=run_params(cfg.model), steps=last[0], tokens=last[1],
                resumed_at=[e.step for e in run.events() if e.kind == 'resumed'],
                seconds=evals[-1]['time'] if evals else 0, eps=cfg.train.eps, low_eps=LOW_EPS,
                uniform_first_alpha=round(uniform_first_alpha(cfg.train.probe_T), 4),
                probe=main and main.meta['probe'], meta=main and main.meta, evaluations=evals, trajectory=rows)


def run_params(model_cfg) -> int:
    from sink_nb.model import SinkLM
    return SinkLM(model_cfg).num_params(non_embedding=False)


def shard_sizes(folder:Path) -> dict:
    "Tokens and documents of the prepared train and val parts a run read."
    from sink_nb.runs import Run
    from sink_nb.shards import prepared_path
    t = Run(folder).config.train
    path = Path(t.corpus).expanduser()                 # a prepared folder, or a source prepared in data_dir (as train)
    if not (path / 'meta.json').is_file(): path = prepared_path(t.corpus, t.tokenizer, t.data_dir, **t.corpus_args)
    meta = json.loads((path / 'meta.json').read_text())
    return {part: dict(tokens=meta['parts'][part]['n_tokens'], documents=meta['parts'][part]['n_docs'])
            for part in ('train', 'val')}


def summarize(args):
    """Write the series' JSON result: the plan, the corpus, and every run's summary. With --jobs > 1 the runs are
    measured at once and the file is rewritten as each one is done (a `partial` count says how many are missing), so a
    summary stopped by a time limit keeps the runs it finished."""
    corpus = (args.corpus or Path('~/.cache/sink_nb/corpora/debian-docs')).expanduser()
    card = json.loads((corpus / 'card.json').read_text())
    folders = sorted(p for p in args.out.iterdir() if (p / 'config.yaml').exists())
    head = dict(command='python bench/language_series.py ' + ' '.join(sys.argv[1:]), device=args.trained_on,
                plan=dict(sizes=list(SIZES), seeds=list(SERIES_SEEDS), tokens_per_step=TOKENS_PER_STEP,
                          steps=args.steps, knob_steps=KNOB_STEPS,
                          knobs={k: dict(about=v['about'], paper=v['paper'], toy=v['toy']) for k, v in KNOBS.items()}),
                corpus=dict(name=card['name'], totals=card['totals'], tokenizer=card.get('tokenizer'),
                            packages=len(card['packages']), shards=shard_sizes(folders[0]) if folders else None))

    def write(runs:list[dict]):
        missing = len(folders) - len(runs)
        result = head | (dict(partial=f'{missing} of {len(folders)} runs not yet summarized') if missing else {}) | \
            dict(runs=sorted(runs, key=lambda r: r['name']))
        tmp = Path(args.json).with_suffix('.tmp')
        tmp.write_text(json.dumps(result, indent=1) + '\n'); tmp.replace(args.json)     # never a half-written file

    if args.jobs == 1: runs = [run_summary(f, not args.quiet) for f in folders]
    else:                                      # one run a process, one thread each: a 16-core machine measures 16 at once
        runs = []
        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context('spawn')) as ex:
            for future in as_completed([ex.submit(run_summary, f, False, 1) for f in folders]):
                runs.append(future.result()); write(runs)
    write(runs)
    print(f"wrote {args.json}: {len(runs)} runs")


def merge(args):
    """One series JSON from several summaries of the same runs at different times (--sources, oldest first): each run as
    the summary whose trajectory goes furthest gives it, its log (evaluations, status, resumes, training time) taken
    from the run folder in --out, which may hold only the logs (a machine's checkpoints can be gone). The first source
    gives the plan and corpus; each run says which source its trajectory came from."""
    from sink_nb.runs import Run
    if not args.sources: raise SystemExit('merge: give --sources, the summaries to merge (JSON files), oldest first')
    sources = []
    for f in args.sources:
        try: sources.append(src := json.loads(Path(f).read_text())); assert {'runs', 'corpus', 'plan'} <= set(src)
        except (OSError, ValueError, AssertionError, TypeError) as e:
            raise SystemExit(f"merge: {f} is not a summary that `summarize` wrote ({type(e).__name__}: {e})") from None
    if len({json.dumps(s['corpus'], sort_keys=True) for s in sources}) > 1: raise SystemExit('merge: the sources '
                                                                                        'read different corpora')
    best = {}
    for i, src in enumerate(sources):
        for r in src['runs']:
            end = r['trajectory'][-1]['step'] if r['trajectory'] else -1
            if r['name'] not in best or end >= best[r['name']][0]: best[r['name']] = (end, i, r)
    runs = []
    for name, (end, i, r) in sorted(best.items()):
        if not (args.out / name / 'config.yaml').is_file():
            raise SystemExit(f'merge: {args.out / name} holds no run (config.yaml and log) of {name}')
        run = Run(args.out / name)
        evals = [dict(step=e.step, tokens=e.tokens, val_loss=round(e.val_loss, 4), loss=e.loss and round(e.loss, 4),
                      sink1=e.sink[1], time=e.time) for e in run.metrics()]
        # to the source's last checkpoint the log must be the source's; after it a run resumed from that checkpoint
        # re-trained the steps, which on a GPU are not bit-identical (its kernels' sums do not keep one order)
        logged = lambda rows: [{k: e[k] for k in ('step', 'tokens', 'val_loss', 'sink1')} for e in rows if e['step'] <= end]
        if logged(evals) != logged(r['evaluations']):
            raise SystemExit(f"merge: the log of {name} in {args.out} is not source {i}'s up to step {end}")
        last = max((evals[-1]['step'], evals[-1]['tokens']), (r['steps'], r['tokens']))
        runs.append(r | dict(status=run.status, steps=last[0], tokens=last[1], evaluations=evals,
                             resumed_at=[e.step for e in run.events() if e.kind == 'resumed'],
                             seconds=evals[-1]['time'], trajectory_source=args.sources[i]))
    result = sources[0] | dict(command='python bench/language_series.py ' + ' '.join(sys.argv[1:]),
                               sources=[dict(file=f, command=s['command'], runs=len(s['runs']), partial=s.get('partial'))
                                        for f, s in zip(args.sources, sources)], runs=runs)
    result.pop('partial', None)
    Path(args.json).write_text(json.dumps(result, indent=1) + '\n')
    print(f"wrote {args.json}: {len(runs)} runs from {len(sources)} summaries")


def at_least_one(text:str) -> int:
    "argparse type: a whole number of 1 or more."
    try: n = int(text)
    except ValueError: n = 0
    if n < 1: raise argparse.ArgumentTypeError(f'{text!r} is not a whole number of 1 or more')
    return n


def folder_name(text:str) -> Path:
    "argparse type: a folder's name ('' would be the current folder)."
    if not text.strip(): raise argparse.ArgumentTypeError(f"{text!r} is not a folder name; give the folder of the runs")
    return Path(text)


DEFAULT_CORPUS = Path('~/.cache/sink_nb/corpora/debian-docs')     # where the lang-* configs read the corpus
TRAINS = ('pilot', 'series', 'knobs', 'stages')                  # the commands that write runs


def tool_names() -> set[str]:
    "The run folders this tool makes: series, knob and pilot runs."
    series = {f'{c}-seed{s}' for c in SIZES for s in SERIES_SEEDS}
    return series | {f'{k}-seed{s}' for k in KNOBS for s in SERIES_SEEDS} | {f'lr-{lr:g}' for lr in PILOT_LRS}


def out_problem(out:Path, flag:str, train:bool) -> str|None:
    "Why `out` cannot be this command's folder of runs (None: it can)."
    if out.is_file(): return f"{flag} {out} is a file, not a folder"
    if not out.exists(): return None if train else f"{flag} {out}: no folder there"
    if (out / 'config.yaml').exists(): return f"{flag} {out} is a run folder; give the folder that holds the runs"
    odd = sorted(p.name for p in out.iterdir() if p.name not in tool_names() or not p.is_dir())
    if train and odd:
        return f"{flag} {out} holds what this tool does not write ({', '.join(odd[:5])}); give a folder of its own"
    return None


def corpus_problem(args) -> str|None:
    "Why the runs could not read their corpus (None: the files are there)."
    if args.prepared is not None:
        if (args.prepared / 'meta.json').is_file(): return None
        return f"--prepared {args.prepared} holds no meta.json of prepared shards"
    corpus = (args.corpus or DEFAULT_CORPUS).expanduser()
    missing = [f for f in ('train.jsonl', 'heldout.jsonl', 'tokenizer') if not (corpus / f).exists()]
    if not missing: return None
    build = 'build it with `sink-nb corpus debian-docs`' + ('' if args.corpus else ' or give --corpus')
    return f"--corpus {corpus} holds no {', '.join(missing)}: {build}"


def argument_problem(args) -> str|None:
    "The first argument that cannot work for this command, as one line (None: all can)."
    train = args.what in TRAINS
    if args.what == 'stages' and args.knobs_out is None: return '--knobs-out: stages needs the folder of the knob runs'
    outs = [('--out', args.out)] + ([('--knobs-out', args.knobs_out)] if args.what == 'stages' else [])
    problems = [out_problem(out, flag, train) for flag, out in outs]
    if train: problems.append(corpus_problem(args))
    if args.what == 'summarize':
        corpus = (args.corpus or DEFAULT_CORPUS).expanduser()
        if not (corpus / 'card.json').is_file():
            problems.append(f"--corpus {corpus} holds no card.json (a corpus `sink-nb corpus debian-docs` built)")
    if args.what in ('summarize', 'merge') and not args.json:
        problems.append(f'--json: {args.what} needs a file to write')
    return next((p for p in problems if p), None)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('what', choices=('pilot', 'series', 'knobs', 'stages', 'status', 'summarize', 'merge'))
    p.add_argument('--out', type=folder_name, required=True, help='folder of the runs')
    p.add_argument('--corpus', type=Path, help='a built debian-docs corpus elsewhere than the configs say')
    p.add_argument('--data-dir', type=Path, help='where prepared token shards are kept')
    p.add_argument('--prepared', type=Path, help="train on these prepared shards (a folder --data-dir holds) instead of "
                                                 "the corpus's text")
    p.add_argument('--steps', type=at_least_one, default=12500, help='steps of each series run (32 x 256 tokens each)')
    p.add_argument('--until', type=at_least_one, help='train every run only to this step for now (a stage; resumed '
                                                      'later)')
    p.add_argument('--sizes', nargs='+', choices=SIZES, help='a subset of the sizes')
    p.add_argument('--jobs', type=at_least_one, default=2, help='runs at once, one thread each (summarize: runs measured at once)')
    p.add_argument('--trained-on', default='CPU (2 cores)', help="summarize: the machine the runs trained on, as the "
                                                               "JSON's `device` says")
    p.add_argument('--knobs-out', type=folder_name, help='stages: folder of the knob runs')
    p.add_argument('--json', help='pilot, summarize: write the result here')
    p.add_argument('--quiet', action='store_true')
    p.add_argument('--sources', nargs='+', help='merge: summaries of the same runs (JSON), oldest first')
    args = p.parse_args(argv)
    if problem := argument_problem(args): p.error(problem)
    out = args.out.absolute()
    made = next((d for d in [*reversed(out.parents), out] if not d.exists()), None)     # the first folder made here
    try:
        if args.what in TRAINS: out.mkdir(parents=True, exist_ok=True)
    except OSError as e: p.error(f"--out {args.out} cannot be made: {e.strerror}")
    os.environ.setdefault('OMP_WAIT_POLICY', 'PASSIVE')
    try: dict(pilot=pilot, series=series, knobs=knobs, stages=stages, status=status, summarize=summarize,
              merge=merge)[args.what](args)
    finally:                                    # a start that failed leaves no empty --out behind
        for d in [out, *out.parents]:
            if made is None or not d.is_relative_to(made) or not d.is_dir() or any(d.iterdir()): break
            d.rmdir()


if __name__ == '__main__':
    main()
