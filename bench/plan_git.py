"""What git can prove about a study's plan, in one place for every planned study (bench/language_plan.py,
bench/mitigations_confirm.py, tests/test_plans.py): where the plan file stands in git, the time of the commit that
fixed it, and whether every run of a results file started after that commit under that very file.

A results file that names a plan holds `plan` = {path, commit, sha256} (the plan file's path in the repository, the
commit that last changed it before the runs, the file's SHA-256 there) and `runs`, each with `started` (UTC, ISO 8601).
`results_problems` lists what is wrong with one; tests/test_plans.py runs it on every results file in the repository.
"""
import hashlib, subprocess
from datetime import datetime, timezone
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent


def file_sha256(data:bytes) -> str: return hashlib.sha256(data).hexdigest()


def utc_now() -> str: return datetime.now(timezone.utc).isoformat(timespec='milliseconds')


def git(root:Path, *args:str) -> bytes|None:
    "git's stdout in `root` (None: git failed or is missing)."
    try: r = subprocess.run(['git', '-C', str(root), *args], capture_output=True, timeout=60)
    except OSError: return None
    return r.stdout if r.returncode == 0 else None


def plan_state(plan_path:Path) -> dict:
    "Where git stands on the plan file: its repository, path there, last commit, uncommitted changes, and SHA-256."
    plan_path = Path(plan_path).resolve()
    top = git(plan_path.parent, 'rev-parse', '--show-toplevel')
    # a copy without git history (a lent GPU's) names the plan as the checkout does: its path in the repository
    path = plan_path.relative_to(CHECKOUT).as_posix() if plan_path.is_relative_to(CHECKOUT) else str(plan_path)
    state = dict(root=None, path=path, commit=None, dirty=None, sha256=file_sha256(plan_path.read_bytes()))
    if top is None: return state
    root = Path(top.decode().strip())
    rel = plan_path.relative_to(root).as_posix()
    commit = git(root, 'log', '-1', '--format=%H', '--', rel).decode().strip() or None
    dirty = bool(git(root, 'status', '--porcelain', '--', rel).strip())    # modified, staged or untracked
    return state | dict(root=str(root), path=rel, commit=commit, dirty=dirty)


def plan_problem(state:dict) -> str|None:
    "Why git cannot prove the plan came before its runs (None: it can)."
    if state['root'] is None: return f"{state['path']} is in no git repository (a copy without it: give --plan-commit)"
    if state['commit'] is None: return f"{state['path']} is not committed: commit it first (git add, git commit)"
    if state['dirty']: return f"{state['path']} has uncommitted changes: commit them first, or undo them"
    return None


def commit_facts(root:Path, commit:str, path:str) -> tuple[datetime, str]|str:
    "The commit's committer time and the plan file's SHA-256 at it, or why git cannot give them."
    when = git(root, 'show', '-s', '--format=%cI', f'{commit}^{{commit}}')
    if when is None: return f"commit {commit} is not in the repository at {root}"
    blob = git(root, 'show', f'{commit}:{path}')
    if blob is None: return f"commit {commit} holds no {path}"
    return datetime.fromisoformat(when.decode().strip()), file_sha256(blob)


def results_problems(results:dict, root:Path=CHECKOUT) -> list[str]:
    """What git cannot show about a results file that names its plan (empty: every run started after the commit that
    last changed the plan, that file's SHA-256 at the commit is the one recorded, and the plan has not changed since)."""
    plan, runs = results.get('plan'), results.get('runs')
    if not (isinstance(plan, dict) and all(isinstance(plan.get(k), str) for k in ('path', 'commit', 'sha256'))):
        return ["names no plan as {path, commit, sha256}"]
    if not (isinstance(runs, list) and runs): return ['records no runs']
    facts = commit_facts(root, plan['commit'], plan['path'])
    if isinstance(facts, str): return [facts]
    committed, sha = facts
    problems = [] if sha == plan['sha256'] else [
        f"the recorded SHA-256 {plan['sha256'][:12]}… is not the plan's at {plan['commit'][:12]} ({sha[:12]}…)"]
    last = git(root, 'log', '-1', '--format=%H', '--', plan['path'])
    if last is not None and last.decode().strip() != plan['commit']:    # a plan changed after its runs
        problems.append(f"{plan['path']} changed after its runs' commit {plan['commit'][:12]} "
                        f"(last change {last.decode().strip()[:12]})")
    for r in runs:
        try: started = datetime.fromisoformat(r['started'])
        except (KeyError, TypeError, ValueError): problems.append(f"a run has no start time: {str(r)[:120]}"); continue
        if started.tzinfo is None: problems.append(f"run start {r['started']} names no time zone"); continue
        if started <= committed:
            what = ', '.join(f'{k} {r[k]}' for k in ('setting', 'variant', 'seed') if k in r)
            problems.append(f"run {what} started {r['started']}, before the plan's commit {plan['commit'][:12]} "
                            f"({committed.isoformat()})")
    return problems
