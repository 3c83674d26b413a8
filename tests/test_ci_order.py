""".ci/test hands pytest its test files longest first (.ci/test_order.py): every file once, the named ones first, and
pytest and xdist keeping that order (pytest does not when the folder is named as well, xdist not without
--no-loadscope-reorder)."""
import re, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / '.ci'))
from test_order import order   # noqa: E402


def longest() -> list[str]:
    "The LONGEST names .ci/test gives .ci/test_order.py."
    return re.search(r'^LONGEST="([^"]*)"', (ROOT / '.ci' / 'test').read_text(), re.M)[1].split()


def test_every_test_file_once_the_longest_first():
    files = order(longest())
    assert sorted(files) == sorted(f'tests/{p.name}' for p in (ROOT / 'tests').glob('test_*.py'))
    assert files[:len(longest())] == [f'tests/{name}.py' for name in longest()]
    assert 'tests/test_readme_examples.py' in files[:len(longest())]          # 110 s: it must not be handed out last


def test_a_name_that_is_no_test_file_or_is_named_twice_is_refused():
    with pytest.raises(ValueError, match='not a test file in tests/: test_gone'): order(['test_cli', 'test_gone'])
    with pytest.raises(ValueError, match='named twice'): order(['test_cli', 'test_cli'])
    out = subprocess.run([sys.executable, str(ROOT / '.ci' / 'test_order.py'), 'test_gone'], capture_output=True, text=True)
    assert out.returncode == 1 and 'not a test file in tests/: test_gone' in out.stderr


def test_pytest_collects_named_files_in_the_order_given_and_ci_names_no_folder():
    given = ['tests/test_style.py', 'tests/test_bench_tables.py', 'tests/test_plans.py']      # not in name order
    out = subprocess.run([sys.executable, '-m', 'pytest', '--collect-only', '-q', '-p', 'no:cacheprovider', *given],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    collected = list(dict.fromkeys(l.split('::')[0] for l in out.stdout.splitlines() if '::' in l))
    assert collected == given, collected
    command = next(l for l in (ROOT / '.ci' / 'test').read_text().splitlines() if 'python -m pytest $FILES' in l)
    assert ' tests/ ' not in command and 'tests/test_' not in command, command
    assert '--no-loadscope-reorder' in command.split()          # else xdist hands out the files with most tests first


def nb_longest() -> list[str]:
    "The NB_LONGEST notebooks .ci/test gives .ci/nbtest.py."
    return re.search(r'NB_LONGEST="([^"]*)"', (ROOT / '.ci' / 'test').read_text())[1].split()


def test_the_notebooks_go_longest_first_each_once_and_as_nbdev_test_collects_them():
    from nbtest import notebooks, order as nb_order
    nbs = ROOT / 'nbs'
    found = notebooks(nbs)
    files = nb_order(nbs, found, nb_longest())
    assert sorted(files) == sorted(found) and len(files) == len(set(files))
    assert [f.relative_to(nbs).as_posix() for f in files[:len(nb_longest())]] == nb_longest()
    assert nbs / 'experiments' / '04_model_architecture.ipynb' in files[:3]           # the longest: never handed out last
    assert nbs / 'index.ipynb' in found and not any(f.name.startswith(('_', '.')) for f in found)
    command = next(l for l in (ROOT / '.ci' / 'test').read_text().splitlines() if l.startswith('python .ci/nbtest.py'))
    assert '$NB_LONGEST' in command and '--n_workers 2' in command


def test_a_notebook_name_that_nbdev_test_would_not_test_is_refused():
    from nbtest import notebooks, order as nb_order
    nbs = ROOT / 'nbs'
    with pytest.raises(ValueError, match='not a notebook nbdev_test would test in .*: 99_gone.ipynb'):
        nb_order(nbs, notebooks(nbs), ['31_cli.ipynb', '99_gone.ipynb'])
    with pytest.raises(ValueError, match='named twice'): nb_order(nbs, notebooks(nbs), ['31_cli.ipynb'] * 2)
    out = subprocess.run([sys.executable, str(ROOT / '.ci' / 'nbtest.py'), 'gone.ipynb'], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 1 and 'not a notebook nbdev_test would test in' in out.stderr and 'gone.ipynb' in out.stderr
