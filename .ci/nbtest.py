"""nbdev_test with the notebooks handed out longest first: `python .ci/nbtest.py [--n_workers N] [--flags 'slow cuda']
NB...` runs nbdev's own `test_nb` on every notebook `nbdev_test` tests (nbglob from settings.ini's nbs_path, siblings of
a .notest skipped, the same skip and force flags), the named ones (paths under nbs/) first as named, then the others in
name order, on N workers that each take the next notebook when free. nbdev_test hands them out in name order, so the
experiments, the longest notebooks, came last: CI at a73253f ended with one worker idle for about 45 s while the other
ran experiments/09 alone. Prints what `nbdev_test --do_print --timing` prints; exits 1 naming the notebooks that failed.
A named notebook that does not exist is refused: a renamed one would otherwise drop silently to its place by name."""
import argparse, sys, time
from pathlib import Path

from test_order import named_first          # .ci/, this script's folder: the order the pytest files are handed out in


def order(nbs:Path, found:list[Path], first:list[str]) -> list[Path]:
    "`first` (paths relative to `nbs`) as named, then the rest of `found` by name; a ValueError naming a stray name."
    by_name = {p.relative_to(nbs).as_posix(): p for p in found}
    return [by_name[name] for name in named_first(list(by_name), first, f'a notebook nbdev_test would test in {nbs}')]


def notebooks(nbs:Path) -> list[Path]:
    "What nbdev_test collects: nbglob's notebooks under `nbs`, less those beside a .notest file."
    from nbdev.doclinks import nbglob
    return [Path(p).absolute() for p in nbglob(nbs, as_path=True) if not (Path(p).parent / '.notest').exists()]


def main(argv=None) -> int:
    from fastcore.parallel import parallel
    from fastcore.xtras import working_directory
    from nbdev.config import get_config
    from nbdev.test import test_nb
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('first', nargs='*', help='notebooks to start first, as paths under nbs/')
    parser.add_argument('--n_workers', type=int, default=2)
    parser.add_argument('--flags', default='', help="cells flagged so that nbdev_test skips them, to run ('slow cuda')")
    args = parser.parse_args(argv)
    cfg = get_config()
    nbs = Path(cfg.nbs_path).absolute()
    try: files = order(nbs, notebooks(nbs), args.first)
    except ValueError as e: sys.exit(f'.ci/nbtest.py: {e}')
    t0 = time.time()
    with working_directory(nbs):                                       # where nbdev_test runs them from
        results = parallel(test_nb, files, skip_flags=cfg.tst_flags.split(), force_flags=args.flags.split(),
                           n_workers=args.n_workers, basepath=cfg.config_path, pause=0.01, do_print=True)
    passed, times = zip(*results)
    for i, t in sorted(enumerate(times), key=lambda o: o[1], reverse=True): print(f'{files[i].name}: {int(t)} secs')
    print(f'{len(files)} notebooks in {time.time() - t0:.0f} s')
    if failed := [f.relative_to(nbs).as_posix() for ok, f in zip(passed, files) if not ok]:
        sys.stderr.write('\nnbdev Tests Failed On The Following Notebooks:\n' + '=' * 50 + '\n\t' + '\n\t'.join(failed) + '\n')
        return 1
    print('Success.')
    return 0


if __name__ == '__main__':
    try: sys.exit(main())
    except KeyboardInterrupt: sys.exit('.ci/nbtest.py: interrupted')   # the pool's workers stop with it (same group)
