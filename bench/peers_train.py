"""One training step of `SinkLM` against the models a user would train instead, at the same shape: transformers'
`LlamaForCausalLM` (sdpa; built from the SinkLM by `model_export.to_hf`, so the weights are the same) and litgpt's `GPT`
(a LLaMA config: RMSNorm, RoPE, SwiGLU, no biases, untied head). AdamW, cross-entropy, one process, the sides
interleaved and repeated; tokens/s is the median over rounds, and each ratio is the median of the rounds' own ratios
(the sides timed back to back in one round see the same machine) with its range over the rounds. Peak memory: each
side in a fresh process, the rise of the resident set (CPU) or of `max_memory_allocated` (CUDA) over its first steps
— weights, gradients, AdamW state and activations, what a user's process sees. The results file opens with the command,
the machine, the versions and the load before and after (`bench_env`).

    python bench/peers_train.py                                        # CPU: tiny-cpu, 14M, 60M at B=4, T=256, fp32, 5 rounds
    python bench/peers_train.py --presets 60M 160M --T 1024 --device cuda --dtype bf16 --compile   # on a GPU
    python bench/peers_train.py --small                                # CI: tiny-cpu, a few steps
    python bench/peers_train.py --profile 14M --out FILE               # where a SinkLM step spends its time

litgpt is a peer, not a dependency: it is installed on first use into bench/.peers/litgpt (pip --target, no
dependencies but lightning's few; torch is the one already installed) and skipped, with the reason printed, when
that fails (no network).
"""
import argparse, json, os, platform, statistics, subprocess, sys, time, types
from pathlib import Path

import torch
import torch.nn.functional as F

from sink_nb.model import SinkConfig, SinkLM
from sink_nb.model_export import to_hf
from bench_env import Output, spread, spread_text

ROOT = Path(__file__).resolve().parent
LITGPT_DIR = ROOT / '.peers' / 'litgpt'
LITGPT_PACKAGES = ['litgpt==0.5.13', 'lightning==2.6.1', 'lightning-utilities', 'torchmetrics']
SIDES = ('sink_nb', 'transformers', 'litgpt')


def import_litgpt():
    "litgpt's GPT and Config from bench/.peers/litgpt, installed there on first use; (None, why) when it cannot be."
    if not (LITGPT_DIR / 'litgpt' / 'model.py').exists():
        cmd = [sys.executable, '-m', 'pip', 'install', '-q', '--no-deps', '--target', str(LITGPT_DIR), *LITGPT_PACKAGES]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode: return None, f"pip could not install litgpt: {out.stderr.strip().splitlines()[-1:]}"
    sys.path.insert(0, str(LITGPT_DIR))
    package = types.ModuleType('litgpt')                     # litgpt/__init__ imports its CLI (lightning, jsonargparse)
    package.__path__ = [str(LITGPT_DIR / 'litgpt')]; sys.modules.setdefault('litgpt', package)
    try:
        from litgpt.config import Config
        from litgpt.model import GPT
    except ImportError as e: return None, f"litgpt does not import: {e}"
    return (GPT, Config), None


def litgpt_model(cfg:SinkConfig, T:int):
    "litgpt's GPT with the SinkLM's shape."
    (GPT, Config), why = import_litgpt()
    if why: raise RuntimeError(why)
    c = Config(name='sink-nb-peer', block_size=T, vocab_size=cfg.vocab_size, padded_vocab_size=cfg.vocab_size,
               n_layer=cfg.n_layer, n_head=cfg.n_head, n_embd=cfg.n_embd, n_query_groups=cfg.n_kv_head,
               rotary_percentage=1.0, parallel_residual=False, bias=False, norm_class_name='RMSNorm',
               norm_eps=cfg.norm_eps, mlp_class_name='LLaMAMLP', intermediate_size=cfg.d_ff, rope_base=cfg.rope_base)
    return GPT(c)


def build(side:str, preset:str, args):
    "The side's model on the device and a function doing one optimiser step on (x, y)."
    torch.manual_seed(0)
    cfg = SinkConfig.from_name(preset, block_size=max(args.T, 256), backend='auto')
    sink = SinkLM(cfg)
    model = {'sink_nb': lambda: sink, 'transformers': lambda: to_hf(sink),
             'litgpt': lambda: litgpt_model(cfg, args.T)}[side]()
    if side == 'transformers': model.config._attn_implementation = 'sdpa'
    model = model.to(args.device, dtype=torch.float32).train()
    forward = (lambda x: model(input_ids=x).logits) if side == 'transformers' else model
    if args.compile: forward = torch.compile(forward)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=args.device.startswith('cuda'))
    autocast = torch.autocast(args.device.split(':')[0], dtype=getattr(torch, args.dtype),
                              enabled=args.dtype != 'float32')
    def step(x, y):
        with autocast: loss = F.cross_entropy(forward(x).flatten(0, 1).float(), y.flatten())
        loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
        return loss
    return model, step, cfg


def batch(cfg, args):
    ids = torch.randint(0, cfg.vocab_size, (args.batch, args.T + 1), generator=torch.Generator().manual_seed(1))
    ids = ids.to(args.device)
    return ids[:, :-1], ids[:, 1:]


def sync(device):
    if device.startswith('cuda'): torch.cuda.synchronize()


def time_sides(preset:str, sides, args) -> tuple[dict, int]:
    "Seconds per step of each side in each round (lists, one value a round), the sides interleaved over `repeats` rounds."
    built = {s: build(s, preset, args) for s in sides}
    params = {s: sum(p.numel() for p in m.parameters()) for s, (m, _, _) in built.items()}
    if len(set(params.values())) > 1: raise RuntimeError(f"the sides differ in shape at {preset}: {params}")
    x, y = batch(built[sides[0]][2], args)
    for _, step, _ in built.values():
        for _ in range(2): step(x, y)                            # allocator, thread pools, compilation
    sync(args.device)
    seconds = {s: [] for s in sides}
    for _ in range(args.repeats):
        for s, (_, step, _) in built.items():
            t0 = time.perf_counter()
            for _ in range(args.steps): step(x, y)
            sync(args.device); seconds[s].append((time.perf_counter() - t0) / args.steps)
    return seconds, params[sides[0]]


def _rss_kib(field='VmRSS'):
    for line in open('/proc/self/status'):
        if line.startswith(field + ':'): return int(line.split()[1])
    raise RuntimeError(f'{field} not in /proc/self/status')


def worker(args):
    "In a fresh process: the bytes one side adds over its first three steps (model creation included)."
    side, preset = args.worker
    cuda = args.device.startswith('cuda')
    import transformers.models.llama.modeling_llama                      # imports are not the model's memory
    if side == 'litgpt': import_litgpt()
    if cuda: torch.cuda.reset_peak_memory_stats(); base = torch.cuda.memory_allocated()
    else: open('/proc/self/clear_refs', 'w').write('5'); base = _rss_kib() * 1024
    _, step, cfg = build(side, preset, args)
    x, y = batch(cfg, args)
    for _ in range(3): step(x, y)
    sync(args.device)
    peak = torch.cuda.max_memory_allocated() if cuda else _rss_kib('VmHWM') * 1024
    print(json.dumps(dict(peak_bytes=peak - base)))


def peak_memory(side:str, preset:str, args) -> float|None:
    "MiB one side adds, measured in its own process."
    cmd = [sys.executable, __file__, '--worker', side, preset, '--T', str(args.T), '--batch', str(args.batch),
           '--device', args.device, '--dtype', args.dtype] + (['--compile'] if args.compile else [])
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode: return None
    return json.loads(out.stdout.strip().splitlines()[-1])['peak_bytes'] / 2 ** 20


def profile(preset:str, args):
    "A torch profiler table of SinkLM steps, by self CPU time: where a step goes."
    from torch.profiler import ProfilerActivity, profile as torch_profile
    _, step, cfg = build('sink_nb', preset, args)
    x, y = batch(cfg, args)
    for _ in range(2): step(x, y)
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3): step(x, y)
    return prof.key_averages().table(sort_by='self_cpu_time_total', row_limit=args.profile_rows)


def machine(args) -> str:
    dev = torch.cuda.get_device_name() if args.device.startswith('cuda') else \
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {torch.get_num_threads()} threads"
    return f"{dev}, torch {torch.__version__}, {args.dtype}{', compiled' if args.compile else ''}"


def measure(args, out):
    "Rows: per preset, tokens/s and peak MiB of each side and sink_nb's ratio to each peer."
    litgpt, why = import_litgpt()
    sides = SIDES if litgpt else SIDES[:2]
    notes = [f"litgpt skipped: {why}"] if why else []
    rows = []
    for preset in args.presets:
        rounds, params = time_sides(preset, sides, args)
        step_s = {s: statistics.median(v) for s, v in rounds.items()}
        mem = {s: peak_memory(s, preset, args) for s in sides} if args.memory else {}
        rows.append(dict(preset=preset, params=params, step_s=step_s, step_s_rounds=rounds,
                         tokens_per_s={s: args.batch * args.T / v for s, v in step_s.items()},
                         speed_ratio={s: spread(round_ratios(rounds, s)) for s in sides[1:]}, peak_mib=mem))
        out.say(row_text(rows[-1], sides))
    return rows, sides, notes


def round_ratios(rounds:dict, peer:str) -> list[float]:
    "sink_nb's speed over the peer's in each round: the peer's seconds a step over sink_nb's, timed back to back."
    return [p / s for p, s in zip(rounds[peer], rounds['sink_nb'])]


def header(sides) -> str:
    cols = ''.join(f"{s + ' tok/s':>19}" for s in sides) + ''.join(f"{'vs ' + s:>32}" for s in sides[1:])
    return f"{'preset':>8}{cols}" + ''.join(f"{s + ' MiB':>17}" for s in sides)


def row_text(r, sides) -> str:
    tps, mem = r['tokens_per_s'], r['peak_mib']
    ratios = ''.join(f"{spread_text(round_ratios(r['step_s_rounds'], s)):>32}" for s in sides[1:])
    mib = ''.join(f"{mem[s]:>17.0f}" if mem.get(s) is not None else f"{'-':>17}" for s in sides)
    return f"{r['preset']:>8}" + ''.join(f"{tps[s]:>19.0f}" for s in sides) + ratios + mib


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--presets', nargs='+', default=['tiny-cpu', '14M', '60M'])
    p.add_argument('--T', type=int, default=256)
    p.add_argument('--batch', type=int, default=4)
    p.add_argument('--steps', type=int, default=3, help='steps per side per repeat')
    p.add_argument('--repeats', type=int, default=5, help='rounds; the sides run back to back in each (at least 1)')
    p.add_argument('--device', default='cpu')
    p.add_argument('--dtype', default='float32', choices=('float32', 'bfloat16', 'float16'))
    p.add_argument('--compile', action='store_true')
    p.add_argument('--no-memory', dest='memory', action='store_false', help='skip the fresh-process memory runs')
    p.add_argument('--small', action='store_true', help='CI: tiny-cpu, 2 steps, 3 rounds')
    p.add_argument('--profile', metavar='PRESET', help="print a profiler table of SinkLM's step at PRESET")
    p.add_argument('--profile-rows', type=int, default=20)
    p.add_argument('--out', help='write the command, machine and table to this text file')
    p.add_argument('--json', help='also write the rows to this JSON file')
    p.add_argument('--worker', nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    for flag in ('steps', 'repeats'):
        if getattr(args, flag) < 1: p.error(f"--{flag} must be at least 1, got {getattr(args, flag)}")
    if args.small: args.presets, args.steps, args.repeats = ['tiny-cpu'], 2, 3
    return args


def main(argv=None):
    args = parse(argv)
    if args.worker: return worker(args)
    out = Output('peers_train.py', argv)
    if args.profile:
        out.say(f"SinkLM {args.profile}, B={args.batch} x T={args.T}, 3 AdamW steps after 2 warm-up steps; {machine(args)}")
        out.say(profile(args.profile, args))
        out.write(args.out)
        return
    out.say(f"one training step (AdamW), B={args.batch} x T={args.T}, {args.steps} steps a side in each of {args.repeats} "
            f"rounds, the sides back to back in each round; tok/s: median over rounds; vs PEER: sink_nb's speed over the "
            f"peer's, the median of the rounds' own ratios (min-max over the rounds, n rounds); {machine(args)}")
    litgpt, _ = import_litgpt()
    sides = SIDES if litgpt else SIDES[:2]
    out.say(header(sides))
    out.say('-' * len(header(sides)))
    rows, sides, notes = measure(args, out)
    for note in notes: out.say(note)
    out.write(args.out)
    if args.json: Path(args.json).write_text(json.dumps(out.record() | dict(title=machine(args), rows=rows, notes=notes),
                                                        indent=1))
    return rows


if __name__ == '__main__': main()
