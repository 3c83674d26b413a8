"""One conformance suite: every entry of every registry, through what its registry's contract promises.

The entries are read when this module is collected, so an entry registered before collection — by a plugin
(`pytest -p my_entries`) or a conftest — is tested here with no test code; its id is REGISTRY/name. Each `check_*`
function runs one entry's checks and returns what it checked, so the contributor's guide (nbs/contributing.ipynb)
calls them on its examples. Shapes are tiny: the whole suite runs in seconds."""
import functools, tempfile
from pathlib import Path

import pytest
import torch
import transformers
from torch.testing import assert_close

from sink_nb.attention import ATTENTION_OPS, AttentionSpec, attend, attention_weights
from sink_nb.head_stats import HEAD_STATISTICS, head_stats_from_pattern, head_stats_from_qk
from sink_nb.model import SinkConfig, SinkLM
from sink_nb.model_export import to_hf
from sink_nb.positions import POSITIONS
from sink_nb.run_configs import MITIGATIONS
from sink_nb.stream import POLICIES, recomputed_nll, stream_nll
from sink_nb.studies import CPU_STUDIES, plan_study

WINDOW, SINKS, T = 8, 2, 40          # a policy's stream: 31 positions past the cache of 10 keys
VOCAB = 64


def ids_of(registry) -> list:
    "One pytest param per entry of `registry`, named REGISTRY/name: read now, at collection."
    return [pytest.param(name, id=f'{registry.name}/{name}') for name in registry]


def _visible(T:int, window=None, prefix=0) -> torch.Tensor:
    "The paper's visibility written out: key j seen by query i iff j <= i (and i - window < j), or j < prefix."
    i, j = torch.arange(T)[:, None], torch.arange(T)[None]
    vis = j <= i
    if window: vis &= j > i - window
    return vis | (j < prefix)


def _textbook(op, q, k, vis, normalize, phi=None, slot_k=None, sink_logit=None) -> torch.Tensor:
    "The weights by the entry's own `formula`: scaled scores of φ(q), φ(k) (GQA by repeating keys), a slot first."
    G, d = q.shape[1] // k.shape[1], q.shape[-1]
    f = phi if op.feature == 'learned' else op.feature
    qf, kf = (f(q), f(k.repeat_interleave(G, 1))) if f else (q, k.repeat_interleave(G, 1))
    s = qf @ kf.transpose(-1, -2) / d ** 0.5
    if op.fixed_logit is not None: sink_logit = torch.full((q.shape[1],), op.fixed_logit)
    if slot_k is not None:
        kb = slot_k.repeat_interleave(G, 0)[None, :, None]                          # (1, H, 1, d)
        slot = qf @ (f(kb) if f else kb).transpose(-1, -2) / d ** 0.5
    elif sink_logit is not None: slot = sink_logit.view(1, -1, 1, 1).expand(*s.shape[:-1], 1)
    else: return op.formula(s, vis, normalize)
    vis = vis.expand(*s.shape[:-2], *vis.shape)
    return op.formula(torch.cat([slot, s], -1), torch.cat([torch.ones_like(vis[..., :1]), vis], -1), normalize)


def check_op(name:str) -> int:
    "ATTENTION_OPS[name]: its formula, the mask, rows of a normalised op summing to 1, chunked = eager; settings run."
    op, checked = ATTENTION_OPS[name], 0
    assert op.formula is not None, f"ATTENTION_OPS[{name!r}] has no `formula`: the suite's yardstick of its weights"
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 4, 9, 8), torch.randn(1, 2, 9, 8), torch.randn(1, 2, 9, 8)
    phi = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()) if op.feature == 'learned' else None
    slots = [{}] if op.fixed_logit is not None else [{}, dict(slot_k=torch.randn(2, 8))]
    slots += [dict(sink_logit=torch.randn(4))] if op.feature is None and op.fixed_logit is None else []
    for normalize in ([False, True] if op.optional_norm else [True]):
        for mask in ({}, dict(window=3), dict(prefix=2)):
            vis = _visible(9, **mask)
            for slot in slots:
                w = attention_weights(q, k, name, proxy=False, normalize=normalize, feature_map=phi, **mask, **slot)
                assert_close(w, _textbook(op, q, k, vis, normalize, phi, **slot), atol=1e-5, rtol=0)
                assert (w[..., w.shape[-1] - 9:][..., ~vis] == 0).all(), 'a weight on a key the mask hides'
                if normalize and op.normalizer in ('softmax', 'sum'):
                    total = w.sum(-1)
                    zeroed = (total.abs() < 1e-6) & (op.normalizer == 'sum')    # 'sum': a row its map sent to 0
                    assert ((total - 1).abs() < 1e-5)[~zeroed].all(), f'rows summing to {total.flatten()[:4]}'
                checked += 1
            spec = AttentionSpec(name, normalize, **mask)
            eager, _ = attend(q, k, v, spec, feature_map=phi, backend='eager')
            assert_close(attend(q, k, v, spec, feature_map=phi, backend='chunked', chunk=4)[0], eager, atol=1e-5, rtol=0)
    return checked


def check_position(name:str) -> tuple:
    "POSITIONS[name]: built from a tiny config, its bias as `biases_scores` says, a model's forward; logits' shape."
    cls = POSITIONS[name]
    torch.manual_seed(0)
    cfg = SinkConfig.from_name('tiny-cpu', n_layer=1, n_embd=32, n_head=2, d_ff=64, vocab_size=VOCAB, block_size=16,
                               pos=name)
    enc = cls.from_config(cfg)
    assert isinstance(enc, cls), f"{cls.__name__}.from_config built a {type(enc).__name__}"
    assert (enc.score_bias() is not None) == cls.biases_scores, f"{name}: score_bias disagrees with biases_scores"
    logits = SinkLM(cfg).eval()(torch.randint(0, VOCAB, (2, 16)))
    assert logits.shape == (2, 16, VOCAB) and logits.isfinite().all()
    return tuple(logits.shape)


def check_head_stat(name:str) -> int:
    "HEAD_STATISTICS[name]: computed in chunks of query rows = read from full weights, per head; settings run."
    torch.manual_seed(0)
    q, k = torch.randn(2, 4, 20, 8) * 2, torch.randn(2, 2, 20, 8) * 2
    cases = (('softmax', {}), ('softmax', dict(window=5)), ('softmax', dict(slot_k=torch.randn(8))),
             ('softpick', {}), ('sigmoid', dict(normalize=False)))
    for op, kw in cases:
        chunked = head_stats_from_qk(q, k, name, op=op, chunk=3, **kw)[name]
        eager = head_stats_from_pattern(attention_weights(q, k, op, proxy=False, **kw), name,
                                        window=kw.get('window'))[name]
        assert chunked.shape[:2] == (2, 4), f"{name}: shape {tuple(chunked.shape)}, not (batch, heads, ...)"
        assert_close(chunked, eager, atol=1e-5, rtol=0, equal_nan=True)
    return len(cases)


@functools.cache
def _models() -> dict:
    "kind -> (the model streamed through a KV cache, the model recomputed): one layer, so the cache is exact."
    small = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=128)
    torch.manual_seed(0)
    llama = transformers.LlamaForCausalLM(transformers.LlamaConfig(**small, initializer_range=0.3)).eval()
    lm = SinkLM(SinkConfig.from_name('tiny-cpu', n_layer=1, n_kv_head=2, vocab_size=VOCAB)).eval()
    slid = transformers.MistralForCausalLM(transformers.MistralConfig(**small, sliding_window=8)).eval()
    return dict(llama=(llama, llama), sinklm=(to_hf(lm).eval(), lm), sliding=(slid, slid))


def _largest_cache(p, window:int, sinks:int, T:int) -> int|None:
    "The most keys `p` holds at any entry of a T-token text, by running `keep`; None: it never evicts."
    sizes = [len(p.positions(t, window, sinks)) for t in range(T - 1)]
    return max(sizes) if any(n <= t for t, n in enumerate(sizes)) else None


def check_policy(name:str) -> list[str]:
    "POLICIES[name]: valid positions, cache_size the largest, cache = recomputation, a sliding window; what ran."
    p, ids, ran = POLICIES[name], torch.randint(0, VOCAB, (T,), generator=torch.Generator().manual_seed(1)), []
    for window, sinks in ((1, 1), (3, 2), (WINDOW, SINKS)):
        for t in range(T): p.positions(t, window, sinks)                         # ascending, t last: checked
        assert p.cache_size(window, sinks, T) == _largest_cache(p, window, sinks, T) if p.evicts else True
    for kind in ('llama', 'sinklm'):
        cached, model = _models()[kind]
        assert_close(stream_nll(cached, ids, name, WINDOW, SINKS), recomputed_nll(model, ids, name, WINDOW, SINKS),
                     atol=1e-5, rtol=0)
        ran.append(kind)
    slid = _models()['sliding'][0]                                              # its cache keeps the last 8 keys
    if p.cached and p.grows:
        with pytest.raises(ValueError, match=f"policy {name!r} is declared grows=True"):
            stream_nll(slid, ids, name, 3, 2)
        return ran + ['sliding window: refused']
    assert_close(stream_nll(slid, ids, name, 3, 2), recomputed_nll(slid, ids, name, 3, 2), atol=1e-5, rtol=0)
    return ran + ['sliding window']


def check_study(name:str) -> int:
    "CPU_STUDIES[name]: its variants pass the study runner's checks in the demo setting, untrained; variants checked."
    with tempfile.TemporaryDirectory() as tmp:           # a study of the head layout has no second setting (it sets one)
        every, chosen, runs = plan_study(name, Path(tmp) / 'study', seeds=(0, 1), setting='demo')
    assert chosen == every and not runs and set(every) == set(CPU_STUDIES[name])
    return len(every)


def check_mitigation(name:str) -> tuple:
    "MITIGATIONS[name]: its SinkConfig fields build a tiny model that runs a forward; the logits' shape."
    torch.manual_seed(0)
    cfg = SinkConfig.from_name('tiny-cpu', n_layer=1, vocab_size=VOCAB, block_size=16, **MITIGATIONS[name])
    logits = SinkLM(cfg).eval()(torch.randint(0, VOCAB, (2, 16)))
    assert logits.shape == (2, 16, VOCAB) and logits.isfinite().all()
    return tuple(logits.shape)


CHECKS = {ATTENTION_OPS.name: check_op, POSITIONS.name: check_position, HEAD_STATISTICS.name: check_head_stat,
          POLICIES.name: check_policy, CPU_STUDIES.name: check_study, MITIGATIONS.name: check_mitigation}
REGISTRIES = (ATTENTION_OPS, POSITIONS, HEAD_STATISTICS, POLICIES, CPU_STUDIES, MITIGATIONS)


@pytest.mark.parametrize('registry, name', [pytest.param(r.name, p.values[0], id=p.id) for r in REGISTRIES
                                            for p in ids_of(r)])
def test_entry(registry, name):
    "Every entry of every registry meets its registry's contract (ids REGISTRY/name: a late entry gets one)."
    CHECKS[registry](name)


LATE = {'ATTENTION_OPS/late_sigmoid', 'POSITIONS/late_rope', 'HEAD_STATISTICS/late_max_share',
        'POLICIES/late-strided', 'CPU_STUDIES/late-study', 'MITIGATIONS/late-gated-bias'}   # tests/_late_entries.py


def test_a_late_entry_of_every_registry_is_collected_and_passes():
    "A plugin registers one entry in each registry before collection: each gets its conformance test and passes."
    import os, subprocess, sys
    tests = Path(__file__).parent
    env = os.environ | dict(PYTHONPATH=os.pathsep.join([str(tests), os.environ.get('PYTHONPATH', '')]))
    res = subprocess.run([sys.executable, '-m', 'pytest', __file__, '-p', '_late_entries', '-p', 'no:cacheprovider',
                          '-k', 'late and not collected', '-v'], capture_output=True, text=True, env=env, timeout=600)
    passed = {line.split('[', 1)[1].split(']')[0] for line in res.stdout.splitlines() if line.endswith('PASSED')
              or ' PASSED ' in line}
    assert res.returncode == 0 and passed == LATE, res.stdout[-3000:] + res.stderr[-2000:]


def test_an_entry_that_breaks_its_contract_fails_the_suite():
    "The checks can fail: a position that adds a score bias while `biases_scores` says it does not."
    from sink_nb.positions import ALiBi
    name = 'alibi-that-says-no-bias-of-this-test'
    POSITIONS[name] = type('Unbiased', (ALiBi,), dict(biases_scores=False))       # the insert check cannot see it
    try:
        with pytest.raises(AssertionError, match='score_bias disagrees with biases_scores'):
            check_position(name)
    finally:
        del POSITIONS[name]
