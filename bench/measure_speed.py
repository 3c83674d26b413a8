"""What α costs beside the model's own forward: `hf.measure_ids` ÷ a plain sdpa forward of the same ids, at long T.

    python bench/measure_speed.py                      # SmolLM2-135M-Instruct (GGUF), fp32, T = 2048 4096 8192, CPU
    python bench/measure_speed.py --model tiny --T 64 128 --out /tmp/ms.txt     # the tiny config-built Llama (the test)
    python bench/measure_speed.py --model smollm2-shape --device cuda --dtype bfloat16 --sample random --T 8192 32768 \
        --timing-only 32768
                                  # on a GPU: SmolLM2-135M's shape, random weights and ids; adds CUDA peak memory
    python bench/measure_speed.py --model tiny --T 256 --alpha-route flex      # α by one named route (`--help`)

For each T one natural sample (the built-in passages, packed; as `hf.measure` draws it) goes through the base model
three ways, in this order, each timed once after a warm-up at T = 16 (`--repeat` keeps the fastest of several):

- **forward**: `model(input_ids=ids, use_cache=False)` with transformers' sdpa attention, under inference_mode;
- **measure**: `hf.measure_ids(model, ids, alpha_route=...)`, the whole measurement (α of every layer and head), by
  the α route `--alpha-route` names (`metrics.ALPHA_ROUTES`; 'auto': `metrics.choose_alpha_route` picks by device).
  On an LSE route the forward runs a kernel that hands each query row's log-sum-exp to the meter — PyTorch's CPU
  flash kernel in float32 on CPU, compiled flex on CUDA — and every key's column sum takes one more pass
  ('flash-cpu': `metrics.column_sums_from_lse`; 'flex': `metrics.column_sums_flex`); 'chunked' walks the chunks of
  query rows. The table's 'α route' column is the route α took (auto may fall back to 'chunked', e.g. where
  flash-cpu refuses the rows' log-sum-exp spread);
- **walk**: `hf.measure_ids(model, ids, head_stats=('zero_share',))`, where a head statistic makes the meter walk the
  chunks of query rows (`attention.query_chunks`) and compute α there — the path every measurement took before.

The ratio measure ÷ forward is the goal (≤ 1.5). Both α are float32 computations: each is compared with α computed
in float64 (the chunk walk on q and k cast to float64) on three layers — the first, the middle and the last — and with
each other on every layer.
--out gets the command, the machine, the versions and the load average before and after (`bench_env`), then the
table; it is rewritten after every row, so a run stopped part-way keeps the rows it finished (and says so).
"""
import argparse, json, sys, time, warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch
from measure_vs_reference import resolve                           # 'tiny', 'smollm2', a path or a hub id
from bench_env import Output
from sink_nb.metrics import ALPHA_ROUTES, choose_alpha_route

warnings.filterwarnings('ignore', message='.*flex_attention called without torch.compile.*')   # flex off CUDA

HERE = Path(__file__).resolve().parent


def sync():
    if torch.cuda.is_available(): torch.cuda.synchronize()


def timed(f):
    """Wall time of one call of f (the GPU's queue drained before and after), its result, and the bytes of CUDA memory
    it added at its peak over what was allocated before it (None on CPU)."""
    cuda = torch.cuda.is_available()
    sync()
    if cuda: torch.cuda.reset_peak_memory_stats(); base = torch.cuda.memory_allocated()
    t0 = time.perf_counter(); out = f(); sync(); seconds = time.perf_counter() - t0
    return seconds, out, (torch.cuda.max_memory_allocated() - base if cuda else None)


def float64_alpha(model, ids, layers):
    "α of `layers` (L', H, T) for one sample by the chunk walk on q and k cast to float64."
    from sink_nb import hf
    from sink_nb.attention import QK
    from sink_nb.metrics import importance_from_qk
    options = {}
    _, cache = hf.run_with_cache(model, ids, lambda n: any(n in (f'blocks.{l}.attn.hook_q', f'blocks.{l}.attn.hook_k')
                                                          for l in layers), route='qk', alpha_options=options)
    return torch.stack([importance_from_qk(cache[f'blocks.{l}.attn.hook_q'].double(),
                                           cache[f'blocks.{l}.attn.hook_k'].double(), **options[l])[0] for l in layers])


def sample(model, tok, T, kind):
    "One (1, T) sample: the built-in passages packed ('natural'), or token ids drawn uniformly with seed 0 ('random')."
    from sink_nb.hf_load import model_probe
    if kind == 'random':
        return torch.randint(0, model.config.vocab_size, (1, T), generator=torch.Generator().manual_seed(0))
    ids, info = model_probe('natural', T, 1, tok, model.config, pack=True)
    if len(ids) < 1: raise SystemExit(f"T={T}: the built-in passages give no sample this long")
    return ids


def measured(model, ids, alpha_route='auto', **options):
    "`hf.measure_ids` with α by `alpha_route`; its result and the α routes its layers took, joined by '+'."
    from sink_nb import hf
    taken = set()
    result = hf.measure_ids(model, ids, alpha_route=alpha_route, alpha_options=lambda layer: {'on_route': taken.add},
                            **options)
    return result, '+'.join(sorted(taken)) or '-'


def row(model, tok, T, repeat, kind='natural', timing_only=False, alpha_route='auto'):
    """Forward, measure and walk at one T: seconds, ratios, peak memory on CUDA, and each α against float64 and against
    the other. `timing_only`: forward and measure alone (no walk, no float64), for T where those cost too much."""
    from sink_nb import hf
    ids = sample(model, tok, T, kind).to(model.device)
    forward_s = measure_s = float('inf')
    for _ in range(repeat):                                      # alternated, so both see the same machine
        with torch.inference_mode():
            t, _, forward_bytes = timed(lambda: model(input_ids=ids, use_cache=False)); forward_s = min(forward_s, t)
        t, ((alpha, _, route, _), taken), measure_bytes = timed(lambda: measured(model, ids, alpha_route))
        measure_s = min(measure_s, t)
    L, H = alpha.shape[1], model.config.num_attention_heads
    r = dict(T=T, forward_s=forward_s, measure_s=measure_s, ratio=measure_s / forward_s, route=route, alpha_route=taken,
             forward_bytes=forward_bytes, measure_bytes=measure_bytes, eager_maps_bytes=L * H * T * T * 4,
             sink1=100 * (alpha[..., 0] > 0.3).double().mean().item(), walk_s=None, walk_ratio=None, max_delta=None,
             measure_vs_f64=None, walk_vs_f64=None, f64_layers=None)
    if timing_only: return r
    walk_s, (walked, _, _, _), _ = timed(lambda: hf.measure_ids(model, ids, head_stats=('zero_share',)))
    layers = sorted({0, L // 2, L - 1})
    exact = float64_alpha(model, ids, layers).cpu()
    off = lambda a: (a[0, layers].double().cpu() - exact).abs().max().item()
    return r | dict(walk_s=walk_s, walk_ratio=walk_s / forward_s, measure_vs_f64=off(alpha), walk_vs_f64=off(walked),
                    max_delta=(alpha.cpu() - walked.cpu()).abs().max().item(), f64_layers=layers)


def cell(x, spec:str, unit:str='') -> str:
    "x formatted by spec (as '>8.2f') with its unit, or '-' right-aligned to the same width where it was not measured."
    width = int(spec[1:].split('.')[0]) + len(unit)
    return format(x, spec) + unit if x is not None else format('-', f'>{width}')


def save(out:Output, out_file:Path, json_file:Path|None, model:str, rows:list, tail:list):
    "The results so far, `tail` after the table (the lines of an unfinished run); the load after is taken now."
    out.load.done()                                              # again at each save: the last save's is the run's
    out_file.write_text(out.write(None) + ''.join(f'{line}\n' for line in tail))
    if json_file: json_file.write_text(json.dumps(out.record() | dict(model=model, rows=rows, finished=not tail), indent=1))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--model', default='smollm2', help="hub id, folder, .gguf file, 'tiny', 'smollm2' or 'smollm2-shape' (random weights)")
    p.add_argument('--T', type=int, nargs='+', default=[2048, 4096, 8192])
    p.add_argument('--repeat', type=int, default=1, help='timed calls of each kind; the fastest is kept')
    p.add_argument('--device', default='cpu', choices=('cpu', 'cuda'))
    p.add_argument('--dtype', default='float32', choices=('float32', 'bfloat16'))
    p.add_argument('--chunk-scores-log2', type=int, metavar='E',
                   help='scores a chunk (or floats of q a pass) of the metric holds, 2^E, on any device (default: '
                        'metrics.metric_budget: METRIC_CHUNK_SCORES on CPU, a share of the free memory on CUDA)')
    p.add_argument('--alpha-route', default='auto', choices=('auto',) + ALPHA_ROUTES,
                   help="how measure computes α (metrics.choose_alpha_route): 'auto' picks by device; a named route "
                        "that cannot run here is refused before the model loads")
    p.add_argument('--timing-only', type=int, nargs='*', default=[], metavar='T',
                   help='at these T: forward and measure alone, without the walk and the float64 check')
    p.add_argument('--sample', default='natural', choices=('natural', 'random'),
                   help="'random': seeded uniform token ids, for T past the built-in text or the model's positions "
                        "(times and memory only: a random model's α means nothing)")
    p.add_argument('--out', type=Path, help='write the command, machine, versions, load and table here (default '
                   'bench/results/measure_speed_cpu.txt)')
    p.add_argument('--json', type=Path, help='also write the rows here')
    p.add_argument('--note', action='append', default=[], help='a line to add to the written table (repeatable)')
    args = p.parse_args(argv)
    if stray := sorted(set(args.timing_only) - set(args.T)):
        p.error(f"--timing-only {' '.join(map(str, stray))}: not among --T {' '.join(map(str, args.T))}")
    if args.chunk_scores_log2 is not None and not 4 <= args.chunk_scores_log2 <= 34:
        p.error(f"--chunk-scores-log2 {args.chunk_scores_log2}: use 4 to 34 (16 to 2^34 scores a chunk)")
    try: choose_alpha_route(args.alpha_route, args.device, getattr(torch, args.dtype))
    except ValueError as e: p.error(str(e))
    out = Output('measure_speed.py', argv)                       # the load before the model is loaded
    import transformers
    from sink_nb.hf_load import load_model
    transformers.logging.set_verbosity_error(); transformers.logging.disable_progress_bar()
    model, tok, _ = load_model(resolve(args.model), dtype=args.dtype, device=args.device)
    model.set_attn_implementation('sdpa')
    from sink_nb import metrics
    if args.chunk_scores_log2 is not None:                       # read at each call, on every device
        metrics.metric_budget = lambda device='cpu', free_bytes=None: 2 ** args.chunk_scores_log2
    say = out.say
    where = torch.cuda.get_device_name() if args.device == 'cuda' else f"CPU, {torch.get_num_threads()} torch threads"
    budget = metrics.metric_budget(args.device)
    say(f"hf.measure_ids ÷ the plain sdpa forward: model={args.model}, {args.dtype}, {where}, "
        f"metric chunks of 2^{budget.bit_length() - 1} scores, --alpha-route {args.alpha_route} "
        f"(resolves to {choose_alpha_route(args.alpha_route, args.device, getattr(torch, args.dtype))})")
    header = (f"{'T':>5}  {'forward s':>9}  {'measure s':>9}  {'measure/fwd':>11}  {'walk s':>8}  {'walk/fwd':>8}  "
              f"{'|Δα| m-f64':>10}  {'|Δα| w-f64':>10}  {'|Δα| m-w':>9}  {'Sink_1':>6}  route"
              + ("  fwd GiB  measure GiB  eager maps GiB" if args.device == 'cuda' else '') + "  α-route")
    say(header); say('-' * len(header))
    rows = []
    out_file = args.out or HERE / 'results' / 'measure_speed_cpu.txt'
    out_file.parent.mkdir(parents=True, exist_ok=True)
    from sink_nb import hf
    measured(model, model_probe_ids(tok, model).to(model.device), args.alpha_route)      # warm-up at T = 16
    for T in args.T:
        r = row(model, tok, T, args.repeat, args.sample, T in args.timing_only, args.alpha_route); rows.append(r)
        say(f"{T:>5}  {r['forward_s']:>9.2f}  {r['measure_s']:>9.2f}  {r['ratio']:>10.2f}x  {cell(r['walk_s'], '>8.2f')}  "
            f"{cell(r['walk_ratio'], '>7.2f', 'x')}  {cell(r['measure_vs_f64'], '>10.1e')}  {cell(r['walk_vs_f64'], '>10.1e')}  "
            f"{cell(r['max_delta'], '>9.1e')}  "
            f"{r['sink1']:>6.2f}  {r['route']}" + (f"  {r['forward_bytes'] / 2**30:>7.2f}  {r['measure_bytes'] / 2**30:>11.2f}  "
                                                 f"{r['eager_maps_bytes'] / 2**30:>14.1f}" if args.device == 'cuda' else '')
            + f"  {r['alpha_route']}")
        unfinished = f"unfinished: the rows up to T = {T} of T = {' '.join(map(str, args.T))}"
        save(out, out_file, args.json, args.model, rows, [unfinished])   # a run stopped at its time limit keeps these
    say("forward: the base model's own forward (sdpa); measure: hf.measure_ids (α of every layer and head, one sample); "
        "walk: the same with a head statistic, so α comes from the chunk walk (run once); α-route: the route "
        "measure's α took (`metrics.ALPHA_ROUTES`). forward and measure: the "
        f"fastest of {args.repeat}, alternated. |Δα| m-f64 and w-f64: measure's and the walk's α against float64 on "
        f"layers {next((r['f64_layers'] for r in rows if r['f64_layers']), '?')}; m-w: the two against each other on every layer. Sink_1 at "
        "ε = 0.3 on this one sample." + (" GiB: CUDA memory each call adds at its peak over the loaded model; eager "
        "maps: the L·H·T²·4 bytes of one sample's fp32 attention maps, which eager attention with output_attentions "
        "keeps." if args.device == 'cuda' else ''))
    for n in args.note: say(n)
    save(out, out_file, args.json, args.model, rows, [])
    return rows


def model_probe_ids(tok, model):
    "A 16-token natural sample for the warm-up."
    from sink_nb.hf_load import model_probe
    return model_probe('natural', 16, 1, tok, model.config, pack=True)[0]


if __name__ == '__main__':
    main()
