"The `sink-nb` console script as a user runs it: the demo end to end, exit codes, files written."
import json, subprocess, sys
from pathlib import Path

import pytest

SINK_NB = Path(sys.executable).parent / 'sink-nb'


def run(*args, timeout=600):
    return subprocess.run([str(SINK_NB), *map(str, args)], capture_output=True, text=True, timeout=timeout)


def test_entry_point_installed():
    assert SINK_NB.exists(), 'pip install -e . must create the sink-nb console script'
    out = run('--version')
    assert out.returncode == 0 and out.stdout.startswith('sink_nb ')


def test_demo_trains_both_variants_and_a_sink_emerges_in_softmax_only(tmp_path):
    out = run('demo', '--steps', '150', '--out', tmp_path, '--quiet')
    assert out.returncode == 0, out.stderr
    header = next(l for l in out.stdout.splitlines() if l.split()[:1] == ['variant'])
    assert header.split() == ['variant', 'steps', 'loss', 'sink1_start', 'sink1_mid', 'sink1_end', 'seconds']
    summary = json.loads((tmp_path / 'summary.json').read_text())
    assert set(summary) == {'softmax', 'sigmoid'}
    soft, sig = summary['softmax'], summary['sigmoid']
    assert soft['sink_rate_curve'][0][1] == 0 and soft['sink_rate'] > 20, soft       # the sink emerges during the run
    assert sig['sink_rate'] < 10, sig
    assert abs(soft['loss'] - sig['loss']) < 0.2                                       # same task, same loss
    for variant in summary:
        run_dir = tmp_path / variant
        assert (run_dir / 'metrics.jsonl').exists() and (run_dir / 'result.safetensors').exists()
        assert (run_dir / 'checkpoints').is_dir()
    assert (tmp_path / 'sink_rate.svg').read_text().count('<polyline') == 2


def test_train_a_shipped_config_with_overrides(tmp_path):
    out = run('train', '--config', 'demo-sigmoid', 'steps=20', 'eval_every=10', f'out_dir={tmp_path / "r"}', 'progress=false',
              'corpus_args={n: 2000}')
    assert out.returncode == 0, out.stderr
    assert 'Sink_1 =' in out.stdout
    lines = (tmp_path / 'r' / 'metrics.jsonl').read_text().splitlines()
    assert [json.loads(l)['step'] for l in lines] == [0, 10, 20]


@pytest.mark.parametrize('args, flag, allowed', [
    (['demo', '--steps', '1'], '--steps', '>= 50'),
    (['demo', '--steps', 'many'], '--steps', '>= 50'),
    (['measure', 'x', '--eps', '0'], '--eps', '(0, 1)'),
])
def test_bad_arguments_name_the_flag(args, flag, allowed):
    out = run(*args)
    assert out.returncode == 2
    assert flag in out.stderr and allowed in out.stderr, out.stderr


def test_unknown_command_lists_the_commands():
    out = run('fly')
    assert out.returncode == 2 and 'demo' in out.stderr and 'train' in out.stderr
