"bench/explorer_latency.py runs end to end on a small result and reports every control."
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_explorer_latency_small(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'explorer_latency.py'), '--N', '2', '--L', '4', '--H', '4', '--T', '200',
                          '--repeats', '2', '--out', str(tmp_path / 'lat.txt'), '--json', str(tmp_path / 'rows.json')],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode in (0, 1), out.stderr                  # 1 = over the target on a loaded machine, still a valid table
    rows = json.loads((tmp_path / 'rows.json').read_text())['rows']
    assert [r['control'] for r in rows] == ['layer', 'head', 'eps', 'k', 'sample', 'grid click']
    assert all(r['median_ms'] > 0 and r['spec_kib'] > 0 for r in rows)
    assert (tmp_path / 'lat.txt').read_text() == out.stdout
