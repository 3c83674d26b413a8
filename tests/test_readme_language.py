"""The README's sentences about language state what experiment 10's saved series and knob runs give, number for
number: the layout finding (a sink with BOS first, none in the paper's packed layout), the knobs, and the plan that
tests them."""
import json, re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / 'nbs' / 'experiments' / 'results'
SERIES, KNOBS = RESULTS / 'language_series_gpu.json', RESULTS / 'language_knobs_gpu.json'
PAPER = ROOT.parent / 'shared' / 'paper.md'            # beside the checkout here; absent in CI


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
    m = re.search(r'passes Sink₁ 10 % in (\d+) of (\d+) seeds by the checkpoint at ([\d.]+)M tokens \(checkpoints 8\.2M tokens '
                  r'apart; first past 10 % at ([^)]*)\) and stands at ([^%]*) % '
                  r'after ([\d.]+)M', (ROOT / 'README.md').read_text())
    check_onsets(m, 'lang-4x128')
    _, values = onsets_and_values('lang-4x128', m[6])
    assert m[5] == ', '.join(f'{v:.1f}' for v in values[:-1]) + f' and {values[-1]:.1f}'


def test_the_readme_states_lang_6x128s_onsets():
    check_onsets(re.search(r'So does the next size, 6 layers of width 128, in (\d+) of (\d+) seeds by the checkpoint at '
                           r'([\d.]+)M tokens \(checkpoints 8\.2M tokens apart; first past 10 % at ([^)]*)\)', (ROOT / 'README.md').read_text()), 'lang-6x128')


def test_the_readme_states_lang_6x192s_onsets():
    check_onsets(re.search(r'and the largest, 6 layers of width 192, in (\d+) of (\d+) seeds by the checkpoint at '
                           r'([\d.]+)M tokens \(checkpoints 8\.2M tokens apart; first past 10 % at ([^)]*)\)', (ROOT / 'README.md').read_text()), 'lang-6x192')


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


def knob_values(name:str, step:int) -> tuple[list[float], list[float]]:
    "Sink₁ at `step` of knob `name`'s runs and of the same seeds' lang-4x128 runs, in seed order, from the runs' logs."
    at = lambda run: next(e['sink1'] for e in run['evaluations'] if e['step'] == step)
    base = {r['seed']: at(r) for r in json.loads(SERIES.read_text())['runs'] if r['config'] == 'lang-4x128'}
    knob = {r['seed']: at(r) for r in json.loads(KNOBS.read_text())['runs'] if r['name'].rsplit('-seed', 1)[0] == name}
    return [knob[s] for s in sorted(knob)], [base[s] for s in sorted(knob)]


def test_the_readme_states_the_layout_finding():
    "With BOS first a sink forms (the sentences above); in the paper's layout (no-bos) Sink₁ stays below 1 %."
    readme = (ROOT / 'README.md').read_text()
    assert "a sink formed with a fixed BOS first and not in the paper's packed layout; three seeds cannot test" in readme
    assert 'a sink does form' not in readme
    m = re.search(r"In the paper's own layout, packed text with no BOS "
                  r"\(`sink-nb train --config lang-4x128 fixed_token=null`\), the smallest model's Sink₁ after "
                  r"([\d.]+)M tokens is ([^%]*) %, below 1 % in (\d+) of (\d+) seeds, where the same seeds with BOS "
                  r"first read ([^%]*) %\. Gu et al\.'s 60M model forms no sink \(Sink₁ < 1 %\) "
                  r"with 100M tokens of data or fewer \(which the reference code's configs read about 200 times over: 20k steps of "
                  r"about 1M tokens\); these runs are not that manipulation", readme)
    assert m, "the README has no sentence on the paper's layout"
    plan = json.loads(KNOBS.read_text())['plan']
    assert m[1] == f"{plan['knob_steps'] * plan['tokens_per_step'] / 1e6:.1f}"
    no_bos, bos = knob_values('no-bos', plan['knob_steps'])
    said = lambda values, digits: ', '.join(f'{v:.{digits}f}' for v in values[:-1]) + f' and {values[-1]:.{digits}f}'
    assert m[2] == said(no_bos, 2) and m[5] == said(bos, 1)
    assert (int(m[3]), int(m[4])) == (sum(v < 1 for v in no_bos), len(no_bos))
    if PAPER.is_file():                  # the paper's number as ../shared/paper.md records its data-amount runs
        assert '≤100M training tokens → no sink (<1%)' in PAPER.read_text()


def test_the_readme_states_the_knobs_directions_at_the_knob_step():
    readme = (ROOT / 'README.md').read_text()
    m = re.search(r'At the same size and step with BOS first, sigmoid attention without normalisation gives a lower '
                  r'Sink₁ than the same seed\'s base run in (\d+) of (\d+) seeds, a smaller learning rate and a larger '
                  r'weight decay a higher one in (\d+) of (\d+)\. Three seeds cannot resolve a direction \(the '
                  r'smallest two-sided p is ([\d.]+)\)', readme)
    assert m, 'the README has no sentence on the knobs'
    step = json.loads(KNOBS.read_text())['plan']['knob_steps']
    d = knob_directions(['sigmoid', 'lr-0.003', 'wd-0.5'], step)
    assert d['sigmoid'][0] == int(m[1]) and d['sigmoid'][2] == int(m[2])
    assert d['lr-0.003'][1] == d['wd-0.5'][1] == int(m[3]) and d['lr-0.003'][2] == d['wd-0.5'][2] == int(m[4])
    assert float(m[5]) == 2 ** (1 - int(m[2])), 'a two-sided sign-flip test of n paired seeds goes no lower than 2/2^n'


def test_the_readme_names_the_planned_2x2_and_its_plan_exists():
    m = re.search(r'the 2×2 of layout × operation at (\d+) seeds a cell is planned in `([^`]+)` and waits for a GPU',
                  (ROOT / 'README.md').read_text())
    assert m, 'the README does not name the 2x2 plan'
    plan = json.loads((ROOT / m[2]).read_text())
    assert len(plan['seeds']['values']) == int(m[1]) and plan['headline'].startswith('the layout effect')
