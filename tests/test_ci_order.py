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
    return re.search(r'LONGEST="([^"]*)"', (ROOT / '.ci' / 'test').read_text())[1].split()


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
