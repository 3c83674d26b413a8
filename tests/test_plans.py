"""A plan git can prove (issue 55): every results file in the repository that names its plan passes
`plan_git.results_problems` (each run started after the commit that fixed the plan, whose file is the one recorded and
has not changed since); the check fails on planted cases built in a throwaway git repository; experiment 06's
confirmation files name their plan; and `bench/mitigations_confirm.py train` refuses a plan git cannot date."""
import hashlib, importlib.util, json, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from plan_git import results_problems  # noqa: E402
from _git import git  # noqa: E402


def results_files() -> list[Path]:
    "Every JSON results file of the repository: the experiments' and the benchmarks'."
    experiments = (ROOT / 'nbs' / 'experiments' / 'results').glob('*.json')
    return sorted([*experiments, *(ROOT / 'bench' / 'results').rglob('*.json')])


def planned() -> list[Path]:
    """The results files that name a committed plan ({path, commit, sha256}). The language series' files (issue 53)
    carry their settings inline under `plan`, with no commit: git cannot date those runs, as experiment 10 is to say."""
    def names_commit(data):
        return isinstance(data, dict) and isinstance(data.get('plan'), dict) and 'commit' in data['plan']
    return [p for p in results_files() if names_commit(json.loads(p.read_text()))]


def shallow() -> bool:
    r = subprocess.run(['git', '-C', str(ROOT), 'rev-parse', '--is-shallow-repository'], capture_output=True, text=True)
    return r.returncode != 0 or r.stdout.strip() != 'false'


def test_every_planned_results_file_started_after_its_plan_commit():
    if shallow(): pytest.skip('a shallow clone (or no git) has not the plan commits to date the runs against')
    files = planned()
    assert files, 'no results file names a plan: the check below would test nothing'
    for path in files:
        problems = results_problems(json.loads(path.read_text()), ROOT)
        assert not problems, f'{path.relative_to(ROOT)}: ' + '; '.join(problems)


def test_experiment_06s_confirmation_files_name_their_plan_and_every_run():
    spec = importlib.util.spec_from_file_location('mitigations_confirm', ROOT / 'bench' / 'mitigations_confirm.py')
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    plan = json.loads(mod.PLAN.read_text())
    for setting in plan['settings']:
        data = json.loads(mod.results_file(setting).read_text())
        assert data['plan']['path'] == 'bench/plans/mitigations-confirm.json', data['plan']
        assert data['seeds'] and set(data['seeds']) <= set(plan['seeds']['values'])
        runs = {(r['variant'], r['seed']) for r in data['runs']}
        assert runs == {(n, s) for n in plan['mitigations'] for s in data['seeds']}, 'a run is missing its start time'
        assert {(r['mitigation'], r['seed']) for r in data['rows']} == runs



@pytest.fixture
def repo(tmp_path) -> Path:
    "A git repository whose one commit, at COMMITTED, holds plans/plan.json."
    repo = tmp_path / 'repo'
    (repo / 'plans').mkdir(parents=True)
    (repo / 'plans' / 'plan.json').write_text('{"seeds": [100, 101]}\n')
    git(repo, 'init', '-q'); git(repo, 'add', 'plans/plan.json'); git(repo, 'commit', '-q', '-m', 'the plan')
    return repo


def results(repo:Path, *starts:str, sha:str|None=None) -> dict:
    plan = dict(path='plans/plan.json', commit=git(repo, 'rev-parse', 'HEAD'),
                sha256=sha or hashlib.sha256((repo / 'plans' / 'plan.json').read_bytes()).hexdigest())
    return dict(plan=plan, runs=[dict(variant='softmax', seed=100 + i, started=s) for i, s in enumerate(starts)])


def test_runs_after_the_plan_commit_pass(repo):
    assert results_problems(results(repo, '2026-01-01T12:00:01+00:00', '2026-01-02T08:30:00.250+00:00'), repo) == []


def test_a_run_started_before_the_plan_commit_fails_naming_it(repo):
    problems = results_problems(results(repo, '2026-01-01T12:00:01+00:00', '2026-01-01T11:59:59+00:00'), repo)
    assert len(problems) == 1 and 'seed 101' in problems[0] and 'before the plan' in problems[0], problems
    same_second = results_problems(results(repo, '2026-01-01T12:00:00+00:00'), repo)    # git dates to the second
    assert len(same_second) == 1, same_second
    other_zone = results_problems(results(repo, '2026-01-01T13:00:00+02:00'), repo)      # 11:00 UTC
    assert len(other_zone) == 1 and 'seed 100' in other_zone[0], other_zone


def test_a_plan_changed_after_its_runs_or_another_file_fails(repo):
    early = results(repo, '2026-01-03T00:00:00+00:00')
    assert 'is not the plan' in ' '.join(results_problems(results(repo, '2026-01-03T00:00:00+00:00', sha='0' * 64),
                                                           repo))
    (repo / 'plans' / 'plan.json').write_text('{"seeds": [100]}\n')
    git(repo, 'commit', '-q', '-am', 'a later plan', when='2026-01-02T00:00:00+00:00')
    problems = results_problems(early, repo)
    assert len(problems) == 1 and 'changed after its runs' in problems[0], problems


def test_a_results_file_without_plan_times_or_zones_is_refused(repo):
    good = results(repo, '2026-01-03T00:00:00+00:00')
    assert results_problems({'runs': good['runs']}, repo) == ['names no plan as {path, commit, sha256}']
    assert results_problems(dict(good, runs=[]), repo) == ['records no runs']
    assert 'no start time' in results_problems(dict(good, runs=[dict(seed=1)]), repo)[0]
    assert 'no time zone' in results_problems(dict(good, runs=[dict(seed=1, started='2026-01-03T00:00:00')]), repo)[0]
    unknown = dict(good, plan=dict(good['plan'], commit='f' * 40))
    assert 'not in the repository' in results_problems(unknown, repo)[0]


def test_train_refuses_a_plan_git_cannot_date(repo, tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location('mitigations_confirm', ROOT / 'bench' / 'mitigations_confirm.py')
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    (repo / 'plans' / 'plan.json').write_text('{"seeds": [100, 101, 102]}\n')           # changed, not committed
    monkeypatch.setattr(mod, 'PLAN', repo / 'plans' / 'plan.json')
    args = mod.argparse.Namespace(out=tmp_path / 'runs', jobs=1)
    with pytest.raises(SystemExit, match='uncommitted changes'): mod.train(args, {})
    assert not (tmp_path / 'runs').exists(), 'a refused start wrote something'
