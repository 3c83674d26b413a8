"""bench/peers_explorer.py --small: bertviz's head_view and SinkExplorer, on the same tiny model and ids, draw the same
numbers, timed in two interleaved rounds; skipped only when bertviz cannot be installed."""
import json, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from bench_env import record_problems   # noqa: E402   the opening every results file has
REPEATS = 2                       # two rounds: the per-round ratios and the same-sizes-every-round check both run


@pytest.fixture(scope='module')
def ran(tmp_path_factory):
    "The JSON, the text file and stdout of one --small run."
    tmp = tmp_path_factory.mktemp('peers_explorer')
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'peers_explorer.py'), '--small',
                          '--repeats', str(REPEATS), '--out', str(tmp / 'table.txt'), '--json', str(tmp / 'rows.json')],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    if out.stdout.startswith('skipped:'): pytest.skip(out.stdout.strip())    # bertviz could not be installed
    return json.loads((tmp / 'rows.json').read_text()), (tmp / 'table.txt').read_text(), out.stdout


def test_peers_explorer_small(ran):
    (row,) = ran[0]['rows']
    bertviz, sink_nb = row['bertviz'], row['sink_nb']
    assert (row['model'], row['T']) == ('tiny', 32)
    assert row['alpha_delta'] <= 1e-5                  # bertviz's maps give the α sink_nb measured: same model, ids
    assert row['drawn'] == 32 and row['drawn_delta'] <= 6e-5   # the drawn pattern is the HTML's, to 4 decimals
    assert bertviz['read'] == 'read back from the HTML'
    assert bertviz['embedded_weights'] == 2 * 4 * 32 * 32     # bertviz embeds every layer's and head's T×T map
    assert bertviz['bytes'] > 8 * bertviz['embedded_weights']  # as decimal text in its HTML
    assert 0 < sink_nb['spec_bytes'] < sink_nb['state_bytes'] < sink_nb['bytes']
    assert sink_nb['svg_bytes'] > 0 and row['time_ratio']['median'] > 0
    assert row['size_ratio'] > 0 and row['memory_ratio'] > 0


def test_time_ratio_is_per_round_and_spread(ran):
    "Each side's seconds of every round are kept; the ratio is the median of the rounds' own ratios, with its range."
    (row,) = ran[0]['rows']
    ours, theirs = ([r['seconds'] for r in row[side]['rounds']] for side in ('sink_nb', 'bertviz'))
    assert row['repeats'] == len(ours) == len(theirs) == REPEATS
    assert row['time_ratio_rounds'] == [b / s for b, s in zip(theirs, ours)]
    assert row['time_ratio']['n'] == REPEATS and row['time_ratio']['min'] <= row['time_ratio']['median']


def test_results_name_machine_versions_load_and_rounds(ran):
    result, table, stdout = ran
    lines = table.splitlines()
    assert lines[0].startswith('$ python bench/peers_explorer.py --small --repeats 2')
    assert record_problems(table) == [] and lines[2].startswith('versions: python ') and 'altair' in lines[2]
    assert lines[4].startswith('peer: bertviz 1.') and 'median of the per-round ratios' in table
    (row,) = [l for l in lines if l.lstrip().startswith('32 |') and 'x' in l]   # the main table's row, not the detail's
    assert f'n={REPEATS})' in row, row
    assert all(line in stdout for line in lines[4:])          # the file holds what was printed after its header
    assert {'command', 'machine', 'versions', 'load'} <= set(result)
