"""Long-context Sink_1 measurement: `sink_nb.hf.measure` at T = 2048 … 8192 on natural text (the built-in passages,
packed into T-token samples), its time and peak memory, beside the memory that eager `output_attentions=True` would
need for the same forward (computed, not run: the (L, H, T, T) fp32 maps every layer returns).

    python bench/long_context.py                  # SmolLM2-135M-Instruct (GGUF), T = 2048 4096 8192, n = 1, CPU
    python bench/long_context.py --T 8192         # one length
    python bench/long_context.py --model tiny --T 2048 --out /tmp/lc.txt   # the tiny config-built Llama (the test)
    python bench/long_context.py --model HuggingFaceTB/SmolLM2-360M --device cuda --T 8192 16384

The model is resolved as in measure_vs_reference.py: a hub id, a folder, a .gguf file, 'tiny' or 'smollm2'. Each T runs
in its own process: the model is loaded (float32), a warm-up measure at T = 16 runs, the peak probe is reset (on CPU
VmHWM through /proc/self/clear_refs, on CUDA the allocator statistics), then
`hf.measure(model, tok, probe='natural', T=T, n=n, pack=True, progress=False)` runs. 'added' is the rise of the peak
over the loaded model; 'process peak' is the process's whole peak resident set (the larger of the load's and the
measurement's). Where T exceeds the model's max_position_embeddings, allow_longer=True is passed and the row says so.
--out gets the command, the machine, the versions and the load average before the first worker and after the last
(`bench_env`), then the table.
"""
import argparse, json, subprocess, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch
from metric_memory import PeakMemory, _rss_kib                     # the same memory probe as the metric benchmark
from measure_vs_reference import resolve                           # 'tiny', 'smollm2', a path or a hub id
from bench_env import Output

HERE = Path(__file__).resolve().parent


def eager_bytes(N, L, H, T, itemsize=4):
    "Bytes of the attention maps eager `output_attentions=True` returns: N samples × L layers × H heads × T × T."
    return N * L * H * T * T * itemsize


def _texts(corpus):
    if corpus == 'builtin': return None                                    # hf.measure's own default: the Sherlock passages
    from sink_nb.corpora import builtin_texts
    return builtin_texts('sherlock') + builtin_texts('python-docs')


def worker(args):
    "Load the model, reset the peak probe, run hf.measure once; print the row as JSON."
    import transformers
    from sink_nb import hf, hf_load
    transformers.logging.set_verbosity_error(); transformers.logging.disable_progress_bar()
    device, T = torch.device(args.device), args.T[0]
    model, tok, _ = hf_load.load_model(args.path, dtype='float32', device=device)
    c = model.config.get_text_config()
    L, H, limit = c.num_hidden_layers, c.num_attention_heads, getattr(c, 'max_position_embeddings', None)
    allow_longer = isinstance(limit, int) and T > limit
    load_hwm = _rss_kib('VmHWM') * 1024 if device.type == 'cpu' else None
    texts = _texts(args.corpus)
    hf.measure(model, tok, texts=texts, T=16, n=1, pack=True, progress=False)     # warm-up: kernels, thread pools, tokenizer
    with PeakMemory(device) as mem:
        t0 = time.perf_counter()
        res = hf.measure(model, tok, texts=texts, probe='natural', T=T, n=args.n, eps=args.eps, pack=True,
                         progress=False, allow_longer=allow_longer)
        if device.type == 'cuda': torch.cuda.synchronize()
        wall = time.perf_counter() - t0
    process_peak = (max(load_hwm, _rss_kib('VmHWM') * 1024) if device.type == 'cpu'
                    else torch.cuda.max_memory_allocated())
    N = res.metadata['n_found']
    print(json.dumps(dict(T=T, N=N, L=L, H=H, max_pos=limit, allow_longer=allow_longer, seconds=wall,
                          measure_seconds=res.metadata['seconds'], added_bytes=mem.peak, process_peak_bytes=process_peak,
                          eager_bytes=eager_bytes(N, L, H, T), sink1=float(res.rate(1, eps=args.eps)),
                          route=res.metadata['route'], dtype=res.metadata['dtype'], threads=torch.get_num_threads())))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--model', default='smollm2', help="hub id, folder, .gguf file, 'tiny' or 'smollm2'")
    p.add_argument('--T', type=int, nargs='+', default=[2048, 4096, 8192])
    p.add_argument('--n', type=int, default=1, help='samples per T')
    p.add_argument('--eps', type=float, default=0.3)
    p.add_argument('--corpus', choices=('builtin', 'both'), default='builtin',
                   help="'builtin': hf.measure's built-in passages (texts=None); 'both': Sherlock + python-docs")
    p.add_argument('--device', default='cpu')
    p.add_argument('--out', type=Path,
                   help='write the command, machine, versions, load and table here '
                   '(default bench/results/long_context_<cpu|cuda>.txt)')
    p.add_argument('--json', type=Path, help='also write the rows here')
    p.add_argument('--note', action='append', default=[], help='a line to add to the written table (repeatable)')
    p.add_argument('--worker', action='store_true', help=argparse.SUPPRESS)
    p.add_argument('--path', help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker: return worker(args)

    out = Output('long_context.py', argv)                              # the load before the first worker
    say = out.say
    out_file = args.out or HERE / 'results' / f"long_context_{'cuda' if args.device.startswith('cuda') else 'cpu'}.txt"
    device = torch.device(args.device)
    where = f'CUDA ({torch.cuda.get_device_name(device)})' if device.type == 'cuda' else 'CPU'
    path, rows = resolve(args.model), []
    say(f"hf.measure at long T: natural probe (built-in text, pack=True), fp32, model={args.model}, {where}")
    header = (f"{'T':>5} {'N':>2} {'max_pos':>7}  {'seconds':>8}  {'added MiB':>9} {'process peak MiB':>16}  "
              f"{'eager maps MiB*':>15} {'eager/added':>11}  {'Sink_1':>6}  route    note")
    say(header); say('-' * len(header))
    failed = None
    for T in args.T:
        cmd = [sys.executable, __file__, '--worker', '--path', path, '--T', str(T), '--n', str(args.n),
               '--eps', str(args.eps), '--corpus', args.corpus, '--device', args.device]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:                                                # keep the rows that finished
            failed = f'T={T} failed (exit {done.returncode}):\n{done.stderr[-3000:]}'
            say(f"{T:>5}  failed (exit {done.returncode}), see stderr"); break
        r = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(r)
        note = f"allow_longer=True (T > max_position_embeddings={r['max_pos']})" if r['allow_longer'] else ''
        if r['N'] < args.n: note = (note + '; ' if note else '') + f"only {r['N']} of {args.n} samples in the text"
        say(f"{T:>5} {r['N']:>2} {str(r['max_pos']):>7}  {r['seconds']:>8.1f}  {r['added_bytes'] / 2**20:>9.1f} "
            f"{r['process_peak_bytes'] / 2**20:>16.1f}  {r['eager_bytes'] / 2**20:>15.1f} "
            f"{r['eager_bytes'] / max(r['added_bytes'], 1):>10.1f}x  {r['sink1']:>6.2f}  {r['route']:<7}  {note}")
    if rows:
        r = rows[0]
        say(f"* eager maps = N × L × H × T² × 4 bytes (fp32), with L = num_hidden_layers = {r['L']} and H = "
            f"num_attention_heads = {r['H']} from the model config: the attention weights `output_attentions=True` "
            "returns for one forward; computed, not run (a lower bound on eager's peak: logits, softmax temporaries "
            "and the model come on top).")
    say(f"added: rise of the {'CUDA allocated' if device.type == 'cuda' else 'resident-set (VmHWM)'} peak over the loaded "
        "model during hf.measure (tokenising, forward, α); process peak: the whole process, model load included. "
        f"torch threads per worker: {rows[0]['threads'] if rows else '?'}; seconds: wall time of the hf.measure call.")
    for n in args.note: say(n)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out.write(out_file)                                                # the load after the last worker
    if args.json: args.json.write_text(json.dumps(out.record() | dict(model=args.model, device=args.device, rows=rows), indent=1))
    if failed: sys.exit(failed)
    return rows


if __name__ == '__main__':
    main()
