"""The test files in the order CI hands them to pytest's workers: the named ones first, as named (`python .ci/test_order.py
test_a test_b`), then every other tests/test_*.py in name order. A name that is no test file is refused: a renamed file
would otherwise drop silently to its alphabetical place."""
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / 'tests'


def named_first(available:list[str], first:list[str], what:str) -> list[str]:
    "`first` as named, then the rest of `available` by name; a ValueError naming what is not `what`, or a name twice."
    if missing := [name for name in first if name not in available]:
        raise ValueError(f"not {what}: {', '.join(missing)}")
    if len(set(first)) != len(first): raise ValueError(f"a name is named twice: {' '.join(first)}")
    return first + [name for name in sorted(available) if name not in first]


def order(first:list[str]) -> list[str]:
    "tests/NAME.py for each of `first`, then the other test files by name; a ValueError naming what is not a test file."
    files = [p.stem for p in TESTS.glob('test_*.py')]
    return [f'tests/{name}.py' for name in named_first(files, first, 'a test file in tests/')]


if __name__ == '__main__':
    try: print(' '.join(order(sys.argv[1:])))
    except ValueError as e: sys.exit(f'.ci/test_order.py: {e}')
