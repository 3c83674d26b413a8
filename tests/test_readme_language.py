"The README's sentence about language states what experiment 10's saved series gives, number for number."
import json, re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / 'nbs' / 'experiments' / 'results'
SERIES, KNOBS = RESULTS / 'language_series_gpu.json', RESULTS / 'language_knobs_gpu.json'


def onsets_and_values(config:str, millions:str|None=None) -> tuple[list[int|None], list[float]]:
    """Per seed of `config`: the tokens of Sink₁'s onset as experiment 10 reads it (`Trajectory.onsets`, None: none yet),
    and Sink₁ at the checkpoint whose tokens read `millions` (as '73.7'; none asked: no values)."""
    from sink_nb.trajectory import Trajectory
    runs = sorted((r for r in json.loads(SERIES.read_text())['runs'] if r['config'] == config), key=lambda r: r['seed'])
    onsets = [next(o['tokens'] for o in Trajectory(r['trajectory'], r['meta']).onsets() if o['statistic'] == 'sink1')
              for r in runs]
    values = [] if millions is None else [next(t['sink1'] for t in r['trajectory'] if f"{t['tokens'] / 1e6:.1f}" == millions)
                                          for r in runs]
    return onsets, values


def check_onsets(m, config:str):
    "The seeds count, the last onset and each onset in the README's match (`m`: a match of its sentence on `config`)."
    assert m, f'the README has no sentence on {config}'
    onsets, _ = onsets_and_values(config)
    reached = [o for o in onsets if o is not None]
    assert (int(m[1]), int(m[2])) == (len(reached), len(onsets)) and m[3] == f'{max(reached) / 1e6:.1f}'
    assert m[4] == ', '.join(f'{o / 1e6:.1f}M' for o in reached[:-1]) + f' and {reached[-1] / 1e6:.1f}M'


def test_the_readme_states_lang_4x128s_onsets_and_its_sink_at_the_end():
    m = re.search(r'passes Sink₁ 10 % in (\d+) of (\d+) seeds by ([\d.]+)M tokens \(at ([^)]*)\) and stands at ([^%]*) % '
                  r'after ([\d.]+)M', (ROOT / 'README.md').read_text())
    check_onsets(m, 'lang-4x128')
    _, values = onsets_and_values('lang-4x128', m[6])
    assert m[5] == ', '.join(f'{v:.1f}' for v in values[:-1]) + f' and {values[-1]:.1f}'


def test_the_readme_states_lang_6x128s_onsets():
    check_onsets(re.search(r'So does the next size, 6 layers of width 128, in (\d+) of (\d+) seeds by ([\d.]+)M tokens '
                           r'\(at ([^)]*)\)', (ROOT / 'README.md').read_text()), 'lang-6x128')


def test_the_readme_states_lang_6x192s_onsets():
    check_onsets(re.search(r'and the largest, 6 layers of width 192, in (\d+) of (\d+) seeds by ([\d.]+)M tokens '
                           r'\(at ([^)]*)\)', (ROOT / 'README.md').read_text()), 'lang-6x192')


def knob_directions(names:list[str], step:int) -> dict[str, tuple[int, int, int]]:
    """Per knob: (seeds with Sink₁ lower than the same seed's lang-4x128 run at `step`, seeds higher, seeds paired), from
    the runs' logs as experiment 10's knob table reads them."""
    at = lambda run: next(e['sink1'] for e in run['evaluations'] if e['step'] == step)
    base = {r['seed']: at(r) for r in json.loads(SERIES.read_text())['runs'] if r['config'] == 'lang-4x128'}
    out = {}
    for name in names:
        d = [at(r) - base[r['seed']] for r in json.loads(KNOBS.read_text())['runs'] if r['name'].rsplit('-seed', 1)[0] == name]
        out[name] = (sum(x < 0 for x in d), sum(x > 0 for x in d), len(d))
    return out


def test_the_readme_states_the_knobs_directions_at_the_knob_step():
    m = re.search(r'At the smallest size after ([\d.]+)M tokens, sigmoid attention without normalisation and packed text '
                  r'without a BOS give a lower Sink₁ than the same seed\'s base run in (\d+) of (\d+) seeds, a smaller '
                  r'learning rate and a larger weight decay a higher one in (\d+) of (\d+);', (ROOT / 'README.md').read_text())
    assert m, 'the README has no sentence on the knobs'
    step = json.loads(KNOBS.read_text())['plan']['knob_steps']
    assert m[1] == f"{step * json.loads(KNOBS.read_text())['plan']['tokens_per_step'] / 1e6:.1f}"
    d = knob_directions(['sigmoid', 'no-bos', 'lr-0.003', 'wd-0.5'], step)
    assert d['sigmoid'][0] == d['no-bos'][0] == int(m[2]) and d['sigmoid'][2] == d['no-bos'][2] == int(m[3])
    assert d['lr-0.003'][1] == d['wd-0.5'][1] == int(m[4]) and d['lr-0.003'][2] == d['wd-0.5'][2] == int(m[5])
