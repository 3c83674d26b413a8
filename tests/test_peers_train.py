"bench/peers_train.py in its CI size: the three models have one shape, and every side trains."
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from bench_env import record_problems   # noqa: E402   the opening every results file has


def test_peers_train_small(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'peers_train.py'), '--small', '--no-memory', '--repeats', '3',
                          '--out', str(tmp_path / 'table.txt'), '--json', str(tmp_path / 'rows.json')],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads((tmp_path / 'rows.json').read_text())
    (row,) = report['rows']
    sides = set(row['tokens_per_s'])
    if 'litgpt' not in sides: print(report['notes'])                      # no network: litgpt is said to be skipped
    assert {'sink_nb', 'transformers'} <= sides and all(v > 0 for v in row['tokens_per_s'].values())
    from sink_nb.model import SinkConfig, SinkLM
    assert row['params'] == SinkLM(SinkConfig.from_name('tiny-cpu')).num_params(non_embedding=False)
    assert all(len(v) == 3 for v in row['step_s_rounds'].values())       # three rounds, each side timed in each
    assert row['speed_ratio']['transformers']['n'] == 3
    table = (tmp_path / 'table.txt').read_text()
    assert table.startswith('$ python bench/peers_train.py --small') and ', n=3)' in table
    assert record_problems(table) == []                                  # machine, versions, load, in order
