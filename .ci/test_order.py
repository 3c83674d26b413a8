"""The test files in the order CI hands them to pytest's workers: the named ones first, as named (`python .ci/test_order.py
test_a test_b`), then every other tests/test_*.py in name order. A name that is no test file is refused: a renamed file
would otherwise drop silently to its alphabetical place."""
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / 'tests'


def order(first:list[str]) -> list[str]:
    "tests/NAME.py for each of `first`, then the other test files by name; a ValueError naming what is not a test file."
    files = sorted(p.stem for p in TESTS.glob('test_*.py'))
    if missing := [name for name in first if name not in files]:
        raise ValueError(f"not a test file in tests/: {', '.join(missing)}")
    if len(set(first)) != len(first): raise ValueError(f"a file is named twice: {' '.join(first)}")
    return [f'tests/{name}.py' for name in first + [f for f in files if f not in first]]


if __name__ == '__main__':
    try: print(' '.join(order(sys.argv[1:])))
    except ValueError as e: sys.exit(f'.ci/test_order.py: {e}')
