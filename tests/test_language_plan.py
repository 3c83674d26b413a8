"""The language plan of issue 53 (bench/plans/language-2x2.json) is complete and loads as `sink-nb train` would load it,
its directions carry the paper's numbers, and `bench/language_plan.py check` passes records whose runs started after the
plan's commit and fails, naming the run, one that started before. The records are built by hand in a throwaway git
repository; no test trains (the tiny rehearsal is run by hand: `runs --tiny --no-dry-run`)."""
import hashlib, importlib.util, json, os, subprocess, sys
from pathlib import Path

import pytest
from _git import git

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / 'bench' / 'language_plan.py'
PLAN_FILE = ROOT / 'bench' / 'plans' / 'language-2x2.json'
PAPER = ROOT.parent / 'shared' / 'paper.md'            # beside the checkout here; absent in CI


def language_plan():
    "bench/language_plan.py as a module."
    spec = importlib.util.spec_from_file_location('language_plan', SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plan_cli(*args, cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_WAIT_POLICY='PASSIVE')
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=60)


@pytest.fixture(scope='module')
def plan() -> dict: return json.loads(PLAN_FILE.read_text())


def test_every_cell_loads_as_sink_nb_train_would_and_is_its_layout_and_operation(plan):
    from sink_nb.run_configs import load_run_config
    for cell in plan['cells']:
        model_cfg, cfg, _ = load_run_config(plan['config'], cell['overrides'])
        assert (cfg.fixed_token is not None) == (cell['layout'] == 'bos-first'), cell['name']
        assert (model_cfg.attention, model_cfg.normalize) == dict(softmax=('softmax', True), **{
            'sigmoid-no-norm': ('sigmoid', False)})[cell['operation']], cell['name']
    _, base, _ = load_run_config(plan['config'])
    assert base.batch_size * base.seq_len == plan['tokens_per_step']
    for point in plan['read_points']:
        assert point['tokens'] == point['step'] * plan['tokens_per_step']
        assert point['step'] % base.eval_every == 0, 'a read point is an evaluation of every run'


def test_the_plan_is_self_consistent(plan):
    cells = {c['name']: c for c in plan['cells']}
    seeds = plan['seeds']['values']
    assert len(seeds) == len(set(seeds)) == 10 and not set(seeds) & {0, 1, 2, 99}    # not the CPU series' or pilot's
    compared = set()
    for c in plan['comparisons']:
        assert {c['higher'], c['lower']} <= set(cells) and c['higher'] != c['lower'], c['name']
        assert c['direction'] and c['paper']['numbers'], c['name']
        assert all(n in c['paper']['quote'] for n in c['paper']['numbers']), c['name']
        compared |= {c['higher'], c['lower']}
    assert compared == set(cells), 'every cell enters a comparison with a stated direction'
    assert [c['name'] for c in plan['comparisons'] if c.get('headline')] == ['layout']
    assert all(cells[c]['layout'] == plan['design']['knobs_layout'] for c in cells if cells[c]['knob'])
    assert plan['tests']['m'] == len(plan['comparisons']) * len(plan['read_points'])
    stages = plan['run_order']['stages']
    assert all(set(cells) <= {c for s in stages if s['until_step'] >= r['step'] for c in s['cells']}
               for r in plan['read_points']), 'every cell reaches every read point'
    assert set(stages[0]['cells']) == {c for c in cells if not cells[c]['knob']}, 'the first call runs the 2x2'


def test_the_paper_numbers_are_the_papers(plan):
    if not PAPER.is_file(): pytest.skip(f'{PAPER} is not on this machine (the plan quotes its numbers itself)')
    paper = PAPER.read_text()
    missing = [(c['name'], n) for c in plan['comparisons'] for n in c['paper']['numbers'] if n not in paper]
    assert not missing, missing


def test_the_jobs_go_stage_by_stage_and_seed_major(plan, tmp_path):
    jobs = language_plan().plan_jobs(plan, tmp_path, tiny=False, corpus_overrides=[], stages=[1, 2, 3])
    assert len(jobs) == 10 * (4 + 2 + 6)
    first = jobs[:40]
    assert {j['stage'] for j in first} == {1} and {j['steps'] for j in first} == {4000}
    assert [j['seed'] for j in first[:8]] == [100] * 4 + [101] * 4, 'a stop leaves whole seeds of every cell'
    assert first[1]['folder'] == str(tmp_path / 'nobos-softmax' / 'seed100')
    assert [j['steps'] for j in jobs[-60:]] == [12500] * 60



@pytest.fixture
def repo(tmp_path) -> Path:
    "A git repository whose one commit, at COMMITTED, holds plans/plan.json (a copy of the real plan)."
    repo = tmp_path / 'repo'
    (repo / 'plans').mkdir(parents=True)
    (repo / 'plans' / 'plan.json').write_bytes(PLAN_FILE.read_bytes())
    git(repo, 'init', '-q')
    git(repo, 'add', 'plans/plan.json')
    git(repo, 'commit', '-q', '-m', 'the plan')
    return repo


def record(repo:Path, out:Path, starts:list[str], **head) -> Path:
    "DIR/plan_runs.json as `runs` writes it, one run per start time, of the repo's plan commit."
    runs = [dict(cell='bos-softmax', seed=100 + i, stage=1, steps=4000, overrides=[], folder=str(out / f'seed{i}'),
                 started=s, finished=s) for i, s in enumerate(starts)]
    sha = hashlib.sha256((repo / 'plans' / 'plan.json').read_bytes()).hexdigest()
    out.mkdir(parents=True, exist_ok=True)
    (out / 'plan_runs.json').write_text(json.dumps(dict(plan='plans/plan.json', plan_sha256=sha,
                                                        plan_commit=git(repo, 'rev-parse', 'HEAD'), rehearsal=False,
                                                        tiny=False, device='cuda: test', runs=runs) | head))
    return out


def check(repo:Path, out:Path) -> subprocess.CompletedProcess:
    return plan_cli('check', '--out', out, '--plan', repo / 'plans' / 'plan.json')


def test_check_passes_runs_that_started_after_the_plan_commit(repo, tmp_path):
    out = record(repo, tmp_path / 'runs', ['2026-01-01T12:00:01+00:00', '2026-01-02T08:30:00.250+00:00'])
    r = check(repo, out)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count('\nok ') == 2 and 'sha256 matches' in r.stdout


def test_check_fails_naming_the_run_that_started_before_the_plan(repo, tmp_path):
    out = record(repo, tmp_path / 'runs', ['2026-01-02T00:00:00+00:00', '2026-01-01T11:59:59+00:00'])
    r = check(repo, out)
    assert r.returncode != 0
    assert 'BEFORE THE PLAN  stage 1 bos-softmax seed 101' in r.stdout
    assert 'bos-softmax seed 101' in r.stderr and 'before the plan' in r.stderr


@pytest.mark.parametrize('head,words', [
    (dict(rehearsal=True), 'rehearsal'),
    (dict(plan_sha256='0' * 64), 'SHA-256'),
    (dict(plan_commit='f' * 40), 'not in the repository'),
])
def test_check_refuses_what_is_not_evidence(repo, tmp_path, head, words):
    r = check(repo, record(repo, tmp_path / 'runs', ['2026-01-02T00:00:00+00:00'], **head))
    assert r.returncode != 0 and words in r.stderr, r.stderr


def test_check_fails_when_the_plan_changed_after_its_runs(repo, tmp_path):
    out = record(repo, tmp_path / 'runs', ['2026-01-02T00:00:00+00:00'])
    plan_path = repo / 'plans' / 'plan.json'
    plan_path.write_text(plan_path.read_text().replace('"weight_decay=0.5"', '"weight_decay=1.0"'))
    git(repo, 'commit', '-q', '-am', 'a later plan')
    r = check(repo, out)
    assert r.returncode != 0 and 'changed after' in r.stderr, r.stderr


def test_runs_refuse_a_plan_git_cannot_prove(repo, tmp_path):
    plan_path = repo / 'plans' / 'plan.json'
    plan_path.write_text(plan_path.read_text().replace('"name": "language-2x2"', '"name": "edited"'))
    r = plan_cli('runs', '--out', tmp_path / 'runs', '--no-dry-run', '--plan', plan_path)
    assert r.returncode != 0 and 'uncommitted changes' in r.stderr and '--uncommitted-rehearsal' in r.stderr
    assert not (tmp_path / 'runs').exists()
    dry = plan_cli('runs', '--out', tmp_path / 'runs', '--plan', plan_path)    # a dry run only says so
    assert dry.returncode == 0 and 'uncommitted changes' in dry.stdout and '120 jobs' in dry.stdout


@pytest.mark.parametrize('args,words', [
    (['runs', '--out', 'x', '--stages', '4'], ['--stages 4', '1, 2, 3']),
    (['runs', '--out', 'x', '--corpus-overrides', 'lr=1'], ['--corpus-overrides', 'corpus, tokenizer']),
    (['runs', '--out', 'x', '--tiny', '--corpus-overrides', 'corpus=y'], ['--corpus-overrides', '--tiny']),
    (['runs'], ['--out']),
    (['checks'], ['show', 'runs', 'check']),
])
def test_bad_arguments_are_named_with_what_is_allowed(tmp_path, args, words):
    r = plan_cli(*args, cwd=tmp_path)
    assert r.returncode == 2 and 'Traceback' not in r.stderr
    assert all(w in r.stderr for w in words), r.stderr
