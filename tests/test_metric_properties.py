"""Property tests of the metric: for random shapes, operations, masks and chunk sizes, α from q/k in chunks equals
α of the full weight matrix, and the sink rate behaves as its definition says."""
import torch
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

from sink_nb.attention import ATTENTION_OPS, attention_weights
from sink_nb.metrics import importance, importance_from_qk, sink_rate

OPS = [op for op in ATTENTION_OPS if op != 'mlp_kernel']    # mlp_kernel needs a learned φ: covered in the notebook


@st.composite
def cases(draw):
    T = draw(st.integers(1, 40))
    Hkv = draw(st.integers(1, 3)); G = draw(st.integers(1, 3))
    kw = dict(op=draw(st.sampled_from(OPS)), chunk=draw(st.integers(1, T + 3)))
    op = ATTENTION_OPS[kw['op']]
    if op.optional_norm: kw['normalize'] = draw(st.booleans())
    kw['proxy'] = True if kw['op'] == 'linear_kernel' else draw(st.booleans())   # its own weights are signed: not a metric input
    causal = draw(st.booleans())
    if causal:
        kw['window'] = draw(st.one_of(st.none(), st.integers(1, T + 2)))
        kw['prefix'] = draw(st.integers(0, T))
    else: kw['causal'] = False
    slots = ['none'] if op.fixed_logit is not None else ['none', 'slot_k'] + (['sink_logit'] if op.feature is None else [])
    slot = draw(st.sampled_from(slots))
    return dict(B=draw(st.integers(1, 2)), Hkv=Hkv, G=G, T=T, d=draw(st.sampled_from([4, 8])), slot=slot,
                pad=draw(st.booleans()), seed=draw(st.integers(0, 10_000)), kw=kw)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_chunked_equals_full_matrix(c):
    g = torch.Generator().manual_seed(c['seed'])
    B, H, T, d = c['B'], c['Hkv'] * c['G'], c['T'], c['d']
    q = torch.randn(B, H, T, d, generator=g) * 2
    k = torch.randn(B, c['Hkv'], T, d, generator=g) * 2
    kw = dict(c['kw'])
    if c['slot'] == 'slot_k': kw['slot_k'] = torch.randn(c['Hkv'], d, generator=g)
    if c['slot'] == 'sink_logit': kw['sink_logit'] = torch.randn(H, generator=g)
    mask = None
    if c['pad'] and T > 1:
        mask = torch.ones(B, T, dtype=torch.bool)
        mask[0, T // 2:] = False                      # right padding
        if B > 1: mask[1, :T // 3] = False           # left padding
        kw['mask'] = mask
    chunk = kw.pop('chunk')
    full = attention_weights(q, k, **kw)
    n_slots = int(c['slot'] != 'none' or ATTENTION_OPS[kw['op']].fixed_logit is not None)
    assert full.shape == (B, H, T, n_slots + T)
    ref = importance(full, causal=kw.get('causal', True), mask=mask, n_slots=n_slots)
    got = importance_from_qk(q, k, chunk=chunk, **kw)
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)
    if mask is not None:                               # padded keys never count
        assert (got[..., n_slots:][~mask.unsqueeze(1).expand(B, H, T)] == 0).all()


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.integers(1, 3), st.integers(1, 4), st.integers(2, 12), st.integers(0, 999),
       st.floats(0.01, 0.98))
def test_sink_rate_definition(N, L, H, T, seed, eps):
    alpha = torch.rand(N, L, H, T, generator=torch.Generator().manual_seed(seed))
    rates = sink_rate(alpha, eps=eps, k=None)
    by_hand = torch.tensor([[sum(float(alpha[n, l, h, t] > eps) for l in range(L) for h in range(H)) / (L * H)
                             for t in range(T)] for n in range(N)], dtype=torch.float64).mean(0) * 100
    torch.testing.assert_close(rates, by_hand, atol=1e-9, rtol=0)
    assert sink_rate(alpha, eps=eps, k=1) == pytest.approx(rates[0].item())
    assert (sink_rate(alpha, eps=min(eps + 0.01, 0.99), k=None) <= rates).all()    # monotone in ε


def test_chunked_memory_does_not_grow_with_T_squared():
    "The chunk budget bounds a step: α of T = 2048 in chunks of 32 query rows touches ≤ 32·2048 scores per head."
    from sink_nb.attention import auto_chunk
    from sink_nb.metrics import METRIC_CHUNK_SCORES
    for budget in (2 ** 21, METRIC_CHUNK_SCORES):
        for B, H, T in [(1, 16, 4096), (8, 32, 2048), (100, 12, 64)]:
            c = auto_chunk(B, H, T, budget)
            assert 1 <= c <= T and (B * H * c * T <= budget or c == 1)
