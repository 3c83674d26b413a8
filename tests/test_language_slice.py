"""The natural-text series end to end on a small slice (CI's reduced version of experiments/10_sinks_on_language):
real Debian packages fetched with apt-get and unpacked with dpkg-deb, the corpus card, the BPE tokenizer, `sink-nb
prepare` with the held-out documents as validation, a few hundred steps of the lang-4x128 config shrunk, and `sink-nb
trajectory` over its checkpoints."""
import json, math, os, shutil, subprocess, sys
from pathlib import Path

import pytest
from _cli import sink_nb_cli

PACKAGES = ('debian-policy', 'developers-reference', 'dict-devil')     # about 1 MB of prose, 5 MB of downloads

pytestmark = pytest.mark.skipif(shutil.which('apt-get') is None or shutil.which('dpkg-deb') is None,
                                reason='needs Debian packaging tools (apt-get, dpkg-deb)')


def sink_nb(*args, cwd=None) -> str:
    env = dict(os.environ, OMP_WAIT_POLICY='PASSIVE')
    r = sink_nb_cli(*args, cwd=cwd, env=env, timeout=900)
    assert r.returncode == 0, f"sink-nb {' '.join(map(str, args))} failed:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    return r.stdout


@pytest.fixture(scope='module')
def corpus(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('lang')
    out = sink_nb('corpus', 'debian-docs', '--packages', *PACKAGES, '--out', tmp / 'corpus', '--cache', tmp / 'debs',
                  '--vocab-size', 1024, '--heldout-per-mille', 100, '--quiet')
    return tmp, out


def test_corpus_card_lists_sources_sizes_and_licences(corpus):
    tmp, out = corpus
    card = json.loads((tmp / 'corpus' / 'card.json').read_text())
    assert [p['package'] for p in card['packages']] == list(PACKAGES)
    for p in card['packages']:
        assert p['documents'] > 0 and p['bytes'] > 10_000 and p['licences'] and len(p['sha256']) == 64
        assert (tmp / 'corpus' / 'copyright' / p['package']).is_file()
    assert card['totals']['megabytes'] > 0.5 and card['tokenizer']['vocab_size'] == 1024
    text = (tmp / 'corpus' / 'CARD.md').read_text()
    assert all(f'| {p} |' in text for p in PACKAGES) and 'held out' in text
    assert 'documents' in out and 'next: sink-nb prepare' in out
    train = [json.loads(l) for l in (tmp / 'corpus' / 'train.jsonl').read_text().splitlines()]
    held = [json.loads(l) for l in (tmp / 'corpus' / 'heldout.jsonl').read_text().splitlines()]
    assert not {d['text'] for d in train} & {d['text'] for d in held}


def test_rebuild_is_identical_and_reads_the_cache(corpus):
    tmp, _ = corpus
    before = (tmp / 'corpus' / 'train.jsonl').read_bytes()
    sink_nb('corpus', 'debian-docs', '--packages', *PACKAGES, '--out', tmp / 'again', '--cache', tmp / 'debs',
            '--vocab-size', 1024, '--heldout-per-mille', 100, '--quiet', '--num-proc', 1)
    assert (tmp / 'again' / 'train.jsonl').read_bytes() == before
    a, b = (json.loads((tmp / d / 'card.json').read_text())['tokenizer']['sha256'] for d in ('corpus', 'again'))
    assert a == b, 'the tokenizer trained on the same documents differs'


def test_prepare_train_and_trajectory_on_the_slice(corpus):
    tmp, _ = corpus
    c = tmp / 'corpus'
    out = sink_nb('prepare', c / 'train.jsonl', '--val-split', c / 'heldout.jsonl', '--tokenizer', c / 'tokenizer',
                  '--out', tmp / 'shards', '--quiet')
    assert 'train:' in out and 'val:' in out
    meta = json.loads((tmp / 'shards' / 'meta.json').read_text())
    assert meta['vocab_size'] == 1024 and meta['parts']['val']['n_docs'] >= 1
    run = tmp / 'run'
    sink_nb('train', '--config', 'lang-4x128', f'corpus={tmp / "shards"}', f'tokenizer={c / "tokenizer"}',
            'corpus_args={}', 'n_layer=2', 'n_embd=32', 'n_head=2', 'd_ff=64', 'vocab_size=1024', 'seq_len=64',
            'block_size=64', 'batch_size=8', 'steps=200', 'warmup=20', 'eval_every=100', 'checkpoint_every=100',
            'probe_n=8', 'probe_T=64', 'dtype=fp32', f'out_dir={run}', 'progress=false')
    rows = [json.loads(l) for l in (run / 'metrics.jsonl').read_text().splitlines()]
    evals = [r for r in rows if 'val_loss' in r]
    assert [r['step'] for r in evals] == [0, 100, 200] and evals[-1]['val_loss'] < evals[0]['val_loss']
    sink_nb('trajectory', run, '--json', tmp / 'traj.json')
    traj = json.loads((tmp / 'traj.json').read_text())
    steps = [r['step'] for r in traj['rows']]
    assert steps == sorted(steps) and steps[-1] == 200 and len(steps) >= 5        # 1, 2, 4, ... 64, 100, 200
    for r in traj['rows']:
        for k in ('sink1', 'first_share_worst', 'norm_ratio_max', 'previous_max', 'induction_max'):
            assert math.isfinite(r[k]), (k, r)


def test_series_summary_of_the_slice_run(corpus):
    "bench/language_series.py summarize: what experiment 10 reads, from the slice's run (after the test above)."
    tmp, _ = corpus
    if not (tmp / 'run' / 'config.yaml').exists(): pytest.skip('needs the run of test_prepare_train_and_trajectory_on_the_slice')
    runs = tmp / 'runs'; runs.mkdir(exist_ok=True)
    if not (runs / 'run').exists(): (runs / 'run').symlink_to(tmp / 'run')
    bench = Path(__file__).resolve().parent.parent / 'bench' / 'language_series.py'
    r = subprocess.run([sys.executable, str(bench), 'summarize', '--out', str(runs), '--corpus', str(tmp / 'corpus'),
                        '--json', str(tmp / 'series.json'), '--quiet'], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    series = json.loads((tmp / 'series.json').read_text())
    (run,) = series['runs']
    assert run['steps'] == 200 and run['status'].startswith('complete') and run['resumed_at'] == []
    assert series['corpus']['shards']['val']['documents'] >= 1 and 0 < run['uniform_first_alpha'] < 1
    low, main = [t['sink1_low_eps'] for t in run['trajectory']], [t['sink1'] for t in run['trajectory']]
    assert all(a >= b for a, b in zip(low, main)), 'Sink_1 at a lower eps can only count more heads'
    assert [e['step'] for e in run['evaluations']] == [0, 100, 200]
    assert series['plan']['knobs'] and all(k['paper'] for k in series['plan']['knobs'].values())


def test_merge_takes_each_run_from_the_summary_that_measured_it_furthest(corpus):
    "bench/language_series.py merge: the longer trajectory wins, the log comes from the run folder, a changed log is refused."
    tmp, _ = corpus
    if not (tmp / 'series.json').exists(): pytest.skip('needs the summary of test_series_summary_of_the_slice_run')
    bench = Path(__file__).resolve().parent.parent / 'bench' / 'language_series.py'
    newer = json.loads((tmp / 'series.json').read_text()); (run,) = newer['runs']
    older = dict(newer, runs=[dict(run, trajectory=run['trajectory'][:3], evaluations=run['evaluations'][:1], steps=0)])
    (tmp / 'older.json').write_text(json.dumps(older))
    merge = lambda *sources: subprocess.run([sys.executable, str(bench), 'merge', '--out', str(tmp / 'runs'), '--sources',
                                             *map(str, sources), '--json', str(tmp / 'merged.json')],
                                            capture_output=True, text=True, timeout=300)
    for order in ((tmp / 'older.json', tmp / 'series.json'), (tmp / 'series.json', tmp / 'older.json')):
        r = merge(*order); assert r.returncode == 0, r.stderr[-3000:]
        (m,) = json.loads((tmp / 'merged.json').read_text())['runs']
        assert m['trajectory'] == run['trajectory'] and m['trajectory_source'] == str(tmp / 'series.json')
        assert m['evaluations'] == run['evaluations'] and m['steps'] == 200
    end = run['trajectory'][-1]['step']
    bad = dict(newer, runs=[dict(run, evaluations=[dict(e, sink1=e['sink1'] + 1) if e['step'] == end else e
                                                   for e in run['evaluations']])])
    (tmp / 'bad.json').write_text(json.dumps(bad))
    r = merge(tmp / 'older.json', tmp / 'bad.json')
    assert r.returncode != 0 and f'is not source 1' in r.stderr and f'up to step {end}' in r.stderr
    other = dict(newer, corpus=dict(newer['corpus'], name='another'))
    (tmp / 'other.json').write_text(json.dumps(other))
    r = merge(tmp / 'series.json', tmp / 'other.json')
    assert r.returncode != 0 and 'read different corpora' in r.stderr


def test_every_knob_of_the_plan_is_a_valid_lang_4x128_variant():
    "The knob plan (bench/language_series.py) loads as configs that differ from lang-4x128 in what they name only."
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'bench'))
    from language_series import KNOBS, SIZES
    from sink_nb.run_configs import load_run_config
    base_model, base_train, _ = load_run_config(SIZES[0])
    for name, knob in KNOBS.items():
        extra = knob['overrides']
        assert knob['paper'][0] in ('<', '>') and knob['about'], (name, knob)      # the paper's direction, written down
        model, train, _ = load_run_config(SIZES[0], [*extra, f'name=lang-4x128-{name}'])
        changed = {k for k, v in vars(model).items() if getattr(base_model, k) != v} | \
                  {k for k, v in vars(train).items() if getattr(base_train, k) != v}
        named = {o.split('=')[0] for o in extra} | {'name'}
        assert changed and changed <= named, (name, changed, named)


def test_every_knob_names_its_toy_comparison_in_the_saved_confirmation_studies():
    "Each knob's `toy` is a CPU study's variant and base, both in every setting of its saved confirmation seeds."
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'bench'))
    from language_series import KNOBS
    from sink_nb.studies import CPU_STUDIES, STUDY_SETTINGS, load_confirmation
    results = Path(__file__).resolve().parent.parent / 'nbs' / 'experiments' / 'results'
    for name, knob in KNOBS.items():
        toy = knob['toy']
        assert {toy['knob'], toy['base']} <= set(CPU_STUDIES[toy['study']]), (name, toy)
        confirm = load_confirmation(results, toy['study'])
        assert set(confirm) == set(STUDY_SETTINGS), (name, list(confirm))
        for setting, study in confirm.items():
            assert study.seeds(toy['knob']) == study.seeds(toy['base']) and len(study.seeds(toy['base'])) >= 10, setting


def test_a_free_worker_takes_the_next_job_that_can_start_and_a_runs_stages_keep_their_order():
    "bench/language_series.py next_job: the first queued job whose folder no earlier or running job trains."
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'bench'))
    from language_series import next_job
    job = lambda folder, steps: dict(out_dir=folder, steps=steps)
    queue = [job('a', 12500), job('k1', 4000), job('b', 12500)]
    assert next_job(queue, [job('x', 4000)]) == 0                      # nothing in the way: the queue's order
    assert next_job(queue, [job('a', 4000)]) == 1                      # a's stage 1 runs: its stage 3 waits, k1 goes
    assert next_job([job('a', 4000), job('a', 12500), job('b', 4000)], []) == 0
    assert next_job([job('a', 12500), job('b', 12500)], [job('a', 4000), job('b', 4000)]) is None
    assert next_job([job('a', 4000), job('a', 12500)], [job('b', 4000)]) == 0
    assert next_job([], []) is None


def test_prepared_shards_stand_in_for_the_corpus_in_every_run_of_the_plan(tmp_path):
    "--prepared: every job of every stage trains on that folder with no tokenizer; a folder of no shards is refused."
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'bench'))
    import argparse
    from language_series import stage_plan
    shards = tmp_path / 'shards'; shards.mkdir()
    args = argparse.Namespace(out=tmp_path / 'lang', knobs_out=tmp_path / 'knobs', corpus=tmp_path / 'corpus',
                              data_dir=None, prepared=shards, steps=12500, sizes=None)
    with pytest.raises(SystemExit, match='--prepared: .* holds no meta.json'): stage_plan(args)
    (shards / 'meta.json').write_text('{}')
    jobs = [j for _, stage in stage_plan(args) for j in stage]
    assert jobs and all(j['overrides'][:2] == [f'corpus={shards.resolve()}', 'tokenizer=null'] for j in jobs)
    assert not any('train.jsonl' in o or 'val_split' in o for j in jobs for o in j['overrides'])


def test_the_stages_run_in_the_plans_order_and_leave_out_what_is_done(tmp_path, monkeypatch):
    "bench/language_series.py stages: series to the knob step, the knobs, the series to the budget; done runs skipped."
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'bench'))
    import argparse
    from language_series import KNOB_STEPS, KNOBS, SERIES_SEEDS, SIZES, stage_plan
    args = argparse.Namespace(out=tmp_path / 'lang', knobs_out=tmp_path / 'knobs', corpus=None, data_dir=None,
                              prepared=None, steps=12500, sizes=None)
    plan = stage_plan(args)
    assert [name.split(':')[0] for name, _ in plan] == ['1', '2', '3']
    (one, two, three) = (jobs for _, jobs in plan)
    assert len(one) == len(three) == len(SIZES) * len(SERIES_SEEDS) and len(two) == len(KNOBS) * len(SERIES_SEEDS)
    assert {j['steps'] for j in one} == {j['steps'] for j in two} == {KNOB_STEPS} and {j['steps'] for j in three} == {12500}
    assert [j['config'] for j in one][:len(SERIES_SEEDS)] == [SIZES[0]] * len(SERIES_SEEDS)     # smallest size first
    assert all(Path(j['out_dir']).parent == tmp_path / 'knobs' for j in two)
    import language_series
    done = Path(one[0]['out_dir'])                          # a run at the knob step: out of stage 1, still in stage 3
    monkeypatch.setattr(language_series, 'last_checkpoint', lambda out_dir: KNOB_STEPS if Path(out_dir) == done else 0)
    plan = stage_plan(args)
    assert str(done) not in [j['out_dir'] for j in plan[0][1]] and str(done) in [j['out_dir'] for j in plan[2][1]]
