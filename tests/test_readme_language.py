"The README's sentence about language states what experiment 10's saved series gives, number for number."
import json, re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERIES = ROOT / 'nbs' / 'experiments' / 'results' / 'language_series_cpu.json'


def onsets_and_values(config:str, millions:str) -> tuple[list[int|None], list[float]]:
    """Per seed of `config`: the tokens of Sink₁'s onset as experiment 10 reads it (`Trajectory.onsets`, None: none yet),
    and Sink₁ at the checkpoint whose tokens read `millions` (as '32.8')."""
    from sink_nb.trajectory import Trajectory
    runs = sorted((r for r in json.loads(SERIES.read_text())['runs'] if r['config'] == config), key=lambda r: r['seed'])
    onsets = [next(o['tokens'] for o in Trajectory(r['trajectory'], r['meta']).onsets() if o['statistic'] == 'sink1')
              for r in runs]
    values = [next(t['sink1'] for t in r['trajectory'] if f"{t['tokens'] / 1e6:.1f}" == millions) for r in runs]
    return onsets, values


def check_onsets(m, config:str):
    "The seeds count, the last onset and each onset in the README's match (`m`: a match of its sentence on `config`)."
    assert m, f'the README has no sentence on {config}'
    onsets, _ = onsets_and_values(config, '32.8')
    reached = [o for o in onsets if o is not None]
    assert (int(m[1]), int(m[2])) == (len(reached), len(onsets)) and m[3] == f'{max(reached) / 1e6:.1f}'
    assert m[4] == ', '.join(f'{o / 1e6:.1f}M' for o in reached[:-1]) + f' and {reached[-1] / 1e6:.1f}M'


def test_the_readme_states_lang_4x128s_onsets_and_sink_at_32_8m_tokens():
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
