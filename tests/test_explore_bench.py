"""bench/explorer_latency.py runs end to end on a small result and reports every control, after its command, the
machine, versions and load."""
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from bench_env import record_problems   # noqa: E402   the opening every results file has


def test_explorer_latency_small(tmp_path):
    args = ['--N', '2', '--L', '4', '--H', '4', '--T', '200', '--repeats', '2', '--out', str(tmp_path / 'lat.txt'),
            '--json', str(tmp_path / 'rows.json')]
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'explorer_latency.py'), *args],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode in (0, 1), out.stderr                  # 1 = over the target on a loaded machine, still a valid table
    found = json.loads((tmp_path / 'rows.json').read_text())
    assert {'command', 'machine', 'versions', 'load'} <= set(found) and 'altair' in found['versions']
    rows = found['rows']
    assert [r['control'] for r in rows] == ['layer', 'head', 'eps', 'k', 'sample', 'grid click']
    assert all(r['median_ms'] > 0 and r['spec_kib'] > 0 for r in rows)
    text = (tmp_path / 'lat.txt').read_text()
    assert record_problems(text, 'python bench/explorer_latency.py ' + ' '.join(args)) == []
    assert text.endswith(out.stdout)                             # the table as printed, after the header
