"""bench/measure_vs_reference.py runs end to end on the tiny config-built model and the two methods agree;
bench/long_context.py on the same model. Each results file opens with its command, the machine, versions and load."""
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from bench_env import record_problems   # noqa: E402   the opening every results file has


def test_measure_vs_reference_small(tmp_path):
    args = ['--T', '32', '--n', '3', '--out', str(tmp_path / 'table.txt'), '--json', str(tmp_path / 'rows.json')]
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'measure_vs_reference.py'), *args],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert 'time ratio' in out.stdout and 'mem ratio' in out.stdout
    text = (tmp_path / 'table.txt').read_text()
    assert record_problems(text, 'python bench/measure_vs_reference.py ' + ' '.join(args)) == []
    assert text.endswith(out.stdout)                             # the table as printed, after the header
    found = json.loads((tmp_path / 'rows.json').read_text())
    assert {'command', 'machine', 'versions', 'load'} <= set(found) and len(found['load']['after']) == 3
    (row,) = found['rows']
    assert row['T'] == 32 and row['N'] == 3 and row['route'] == 'qk'
    assert row['max_delta'] <= 1e-5 and row['sink1_reference'] == row['sink1_measure']
    assert row['reference_s'] > 0 and row['measure_s'] > 0


def test_long_context_small(tmp_path):
    "bench/long_context.py on the tiny model: the eager figure is L·H·T²·4 bytes and the chunked measurement adds less."
    T = 2048                                                     # eager maps 512 MiB: well above the fixed overheads
    args = ['--model', 'tiny', '--T', str(T), '--out', str(tmp_path / 'table.txt'), '--json', str(tmp_path / 'rows.json')]
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'long_context.py'), *args],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert 'eager/added' in out.stdout
    assert record_problems((tmp_path / 'table.txt').read_text(), 'python bench/long_context.py ' + ' '.join(args)) == []
    found = json.loads((tmp_path / 'rows.json').read_text())
    assert {'command', 'machine', 'versions', 'load'} <= set(found)
    (row,) = found['rows']
    assert (row['T'], row['N'], row['L'], row['H']) == (T, 1, 4, 8)
    assert row['route'] == 'qk' and not row['allow_longer']
    assert row['eager_bytes'] == 4 * 8 * T * T * 4
    assert 0 < row['added_bytes'] < row['eager_bytes'] and row['seconds'] > 0
