"The `sink-nb` console script as a user runs it: installed entry point, exit codes, files written."
import json, os, subprocess, sys
from pathlib import Path

import pytest
from sink_nb.metrics import SinkResult

SINK_NB = Path(sys.executable).parent / 'sink-nb'


def run(*args):
    return subprocess.run([str(SINK_NB), *args], capture_output=True, text=True, timeout=300)


def test_entry_point_installed():
    assert SINK_NB.exists(), 'pip install -e . must create the sink-nb console script'
    out = run('--version')
    assert out.returncode == 0 and out.stdout.startswith('sink_nb ')


def test_demo_default_prints_the_table(tmp_path):
    out = run('demo', '--out', str(tmp_path))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    header = next(l for l in lines if l.split()[:1] == ['layer'])
    assert header.split() == ['layer', 'mean_strength', 'sink1_stream', 'sink1_eager', 'max_abs_diff', 'sink1_sigmoid']
    summary = json.loads((tmp_path / 'summary.json').read_text())
    result = SinkResult.load(tmp_path / 'result.safetensors')
    assert result.alpha.shape == (20, 6, 8, 64)
    assert summary['sink_rate'] == pytest.approx(result.rate())
    assert 0 < summary['sink_rate'] < 100 and summary['sink_rate_sigmoid_proxy'] < summary['sink_rate']
    assert summary['max_abs_diff'] < 1e-5
    per_layer = [row['sink1_stream'] for row in summary['table'][:-1]]
    assert per_layer[-1] > per_layer[0], 'deeper layers carry stronger planted sinks'


@pytest.mark.parametrize('args, flag, allowed', [
    (['demo', '--T', '1'], '--T', '>= 2'),
    (['demo', '--n', 'many'], '--n', '>= 1'),
    (['demo', '--eps', '0'], '--eps', '(0, 1)'),
])
def test_bad_arguments_name_the_flag(args, flag, allowed):
    out = run(*args)
    assert out.returncode == 2
    assert flag in out.stderr and allowed in out.stderr, out.stderr


def test_unknown_command_lists_the_commands():
    out = run('fly')
    assert out.returncode == 2 and 'demo' in out.stderr
