"bench/measure_vs_reference.py runs end to end on the tiny config-built model and the two methods agree."
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_measure_vs_reference_small(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'measure_vs_reference.py'), '--T', '32', '--n', '3',
                          '--json', str(tmp_path / 'rows.json')], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert 'time ratio' in out.stdout and 'mem ratio' in out.stdout
    (row,) = json.loads((tmp_path / 'rows.json').read_text())['rows']
    assert row['T'] == 32 and row['N'] == 3 and row['backend'] == 'stream'
    assert row['max_delta'] <= 1e-5 and row['sink1_reference'] == row['sink1_measure']
    assert row['reference_s'] > 0 and row['measure_s'] > 0
