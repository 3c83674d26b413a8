"""The confirmation runs of the CPU studies (issue 38): every variant of optimization, data, loss and architecture on the
confirmation seeds of `studies.STUDY_SEEDS` in the demo setting, and the variants whose claims the notebooks set against
the paper's also in the second setting of `studies.STUDY_SETTINGS`; then one study file per study and setting.

    python bench/confirmation_studies.py --out /tmp/confirm             # train what is missing (hours on 2 cores), write
    python bench/confirmation_studies.py --out /tmp/confirm --read-only # write the study files from the runs there

Seeds, settings and the variant lists below were fixed before any confirmation run was trained. The demo variant,
which every study holds under its own label, is trained once per seed and setting and read under each label. Runs go
seed by seed across both settings, so a cut leaves whole seeds; a run whose folder says it completed is not retrained.
Writes nbs/experiments/results/STUDY_confirm_cpu.json (demo setting) and STUDY_2-layers-x-4-heads_confirm_cpu.json.
"""
import argparse, sys, time
from pathlib import Path

from sink_nb.runs import Run
from sink_nb.studies import (CPU_STUDIES, STUDY_SEEDS, STUDY_SETTINGS, confirmation_file, in_setting, read_study,
                             train_variant, training_pool, variant_folder)

STUDIES = ('optimization', 'data', 'loss', 'architecture')
SECOND = list(STUDY_SETTINGS)[1]
IN_SECOND = ['lr=0.003', 'lr=0.03', 'random x1', 'random x1, BOS id at x2', 'wd=0.5', 'wd=2', 'prefix 20',
             'window 8, probe T=16', 'causal, probe T=16', 'sigmoid, no norm', 'key bias', 'sink token']  # + demo
RESULTS = Path(__file__).resolve().parents[1] / 'nbs' / 'experiments' / 'results'


def variants(setting:str) -> dict:
    "label -> overrides trained in `setting`: the demo once ('demo'), then each study's other variants."
    chosen = {l: o for s in STUDIES for l, o in CPU_STUDIES[s].items() if o and (setting == 'demo' or l in IN_SECOND)}
    return in_setting({'demo': {}} | chosen, setting)


def folder(out:Path, setting:str, label:str, seed:int) -> Path:
    return out / variant_folder(setting) / variant_folder(label) / f'seed{seed}'


def finished(path:Path) -> bool:
    return path.is_dir() and Run(path).is_run and Run(path).status.startswith('complete')


def train_missing(out:Path, jobs:int):
    todo = [(o, s, None, str(folder(out, setting, l, s)), 1) for s in STUDY_SEEDS['confirmation']
            for setting in STUDY_SETTINGS for l, o in variants(setting).items()
            if not finished(folder(out, setting, l, s))]
    print(f'{len(todo)} runs to train', flush=True)
    t0 = time.time()
    with training_pool(jobs) as pool:
        for i, path in enumerate(pool.imap(_train, todo, chunksize=1)):
            print(f'{i + 1}/{len(todo)} after {time.time() - t0:.0f} s: {path}', flush=True)


def _train(args): return train_variant(*args)


def write_studies(out:Path, command:str):
    "One Study per study and setting, of the seeds whose every run finished; its file under nbs/experiments/results."
    for setting in STUDY_SETTINGS:
        trained = variants(setting)
        for name in STUDIES:
            labels = {l: l if o else 'demo' for l, o in CPU_STUDIES[name].items()}       # label -> the run it reads
            labels = {l: t for l, t in labels.items() if t in trained}
            seeds = [s for s in STUDY_SEEDS['confirmation']
                     if all(finished(folder(out, setting, t, s)) for t in labels.values())]
            if not seeds: print(f'{name}, {setting}: no complete seed yet'); continue
            done = {(l, s): folder(out, setting, t, s) for l, t in labels.items() for s in seeds}
            study = read_study(name, in_setting({l: CPU_STUDIES[name][l] for l in labels}, setting), done, command,
                               dict(seeds=seeds, setting=setting, seed_set='confirmation'))
            path = study.save(RESULTS / confirmation_file(name, setting))
            print(f'{path.name}: {len(labels)} variants x seeds {seeds[0]}-{seeds[-1]} ({len(seeds)})')


if __name__ == '__main__':
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--out', type=Path, required=True, help='folder of the runs')
    p.add_argument('--jobs', type=int, default=2)
    p.add_argument('--read-only', action='store_true', help='train nothing; write the study files from the runs')
    args = p.parse_args()
    if not args.read_only: train_missing(args.out, args.jobs)
    write_studies(args.out, f'python bench/confirmation_studies.py --out {args.out} --jobs {args.jobs}')
