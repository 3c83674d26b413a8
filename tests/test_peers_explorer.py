"""bench/peers_explorer.py --small: bertviz's head_view and SinkExplorer, on the same tiny model and ids, draw the same
numbers; skipped only when bertviz cannot be installed."""
import json, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_peers_explorer_small(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'peers_explorer.py'), '--small',
                          '--out', str(tmp_path / 'table.txt'), '--json', str(tmp_path / 'rows.json')],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    if out.stdout.startswith('skipped:'): pytest.skip(out.stdout.strip())    # bertviz could not be installed
    (row,) = json.loads((tmp_path / 'rows.json').read_text())
    bertviz, sink_nb = row['bertviz'], row['sink_nb']
    assert (row['model'], row['T']) == ('tiny', 32)
    assert row['alpha_delta'] <= 1e-5                  # bertviz's maps give the α sink_nb measured: same model, ids
    assert row['drawn'] == 32 and row['drawn_delta'] <= 6e-5   # the drawn pattern is the HTML's, to 4 decimals
    assert bertviz['read'] == 'read back from the HTML'
    assert bertviz['embedded_weights'] == 2 * 4 * 32 * 32     # bertviz embeds every layer's and head's T×T map
    assert bertviz['bytes'] > 8 * bertviz['embedded_weights']  # as decimal text in its HTML
    assert 0 < sink_nb['spec_bytes'] < sink_nb['state_bytes'] < sink_nb['bytes']
    assert sink_nb['svg_bytes'] > 0 and all(row[r] > 0 for r in ('time_ratio', 'size_ratio', 'memory_ratio'))
    table = (tmp_path / 'table.txt').read_text()
    assert table.startswith('command: python bench/peers_explorer.py --small') and 'machine: ' in table
    assert all(line in out.stdout for line in table.splitlines())          # the file holds what was printed
