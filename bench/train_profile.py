"""Where a training step's time goes: `torch.profiler` over a few steps of `sink_nb.train.train` (data, forward,
backward, clipping, AdamW; compiled with --compile), then the top ops by self time (CUDA time on a GPU, CPU time
otherwise) and the step's time split into matrix products, attention, loss/logits, optimiser and the rest.

    python bench/train_profile.py --preset 60M --T 2048 --batch 16 --device cuda --dtype bfloat16 --compile \\
        --out bench/results/gpu/train_profile.txt --json bench/results/gpu/train_profile.json
    python bench/train_profile.py --preset 60M --T 2048 --batch 16 --device cuda --dtype bfloat16 --compile --loss-chunk 8192
    python bench/train_profile.py                               # CPU: a smoke test at tiny-cpu

The step is profiled after `--skip` steps (compilation, the allocator) for `--steps` steps. Each op falls in one part by
its name (`PARTS`, first match); matrix products whose shapes hold the vocabulary (the output layer, its gradients) count
as loss/logits, not as matrix products. On a GPU the parts share the device's busy time; `idle` is the step's wall time
the device spent waiting (launches, Python, the data).
"""
import argparse, json, os, re, tempfile, time, warnings
from pathlib import Path

import torch
from torch.autograd import DeviceType

from sink_nb.model import SinkConfig
from sink_nb.train import train
from bench_env import Output
from train_throughput import train_settings

warnings.filterwarnings('ignore', message='.*flex_attention called without torch.compile.*')
PARTS = {                                          # the first part whose pattern an op's lower-case name matches
    'loss/logits': r'cross_entropy|log_?softmax|nll_?loss|logsumexp|chunkedce|ce_chunks|scatter_add',
    'optimizer': r'adam|optimizer|foreach|multi_tensor|clip_grad',     # AdamW, clipping, the guard's norms
    'attention': r'attention|attn|flash|fmha|flex|sdpa|triton_tem_fused_(?!.*mm)',
    'matmul': r'gemm|matmul|aten::mm|aten::addmm|aten::bmm|aten::linear|cutlass|nvjet|xmma|cublas|triton_tem_fused_.*mm',
}
ORDER = ('matmul', 'attention', 'loss/logits', 'optimizer', 'other')
LAUNCHERS = ('aten::mm', 'aten::addmm', 'aten::bmm')  # the aten ops that launch a GEMM kernel themselves


def holds_vocab(shapes, vocab:int) -> bool:
    "Does an op's input hold a dimension the size of the vocabulary (the output layer, its gradients)?"
    return any(isinstance(shape, (list, tuple)) and vocab in shape for shape in shapes or ())


def named_part(names) -> str:
    "The first part one of `names` matches (the op's own name first, then its callers')."
    return next((part for name in names for part, pattern in PARTS.items() if re.search(pattern, name.lower())), 'other')


def part_of(event, vocab:int) -> str:
    "The part of an op by its name or, on the CPU, a caller's; a product over the vocabulary is the loss's."
    names, caller = [event.name], event.cpu_parent
    while caller is not None:
        names.append(caller.name)
        caller = caller.cpu_parent
    found = named_part(names)
    return 'loss/logits' if found == 'matmul' and holds_vocab(event.input_shapes, vocab) else found


def split(events, cuda:bool, vocab:int) -> tuple[dict, list]:
    """Seconds per part, and (op, seconds, part) by seconds. CPU: every op's self time. CUDA: every kernel's time; the
    GEMM kernels an aten product over the vocabulary launched move from matrix products to loss/logits."""
    parts, named = dict.fromkeys(ORDER, 0.0), {}
    def add(name, part, seconds):
        parts[part] += seconds
        named[name, part] = named.get((name, part), 0.0) + seconds
    for e in events:
        if cuda and e.device_type == DeviceType.CUDA: add(e.name, part_of(e, vocab), e.device_time_total / 1e6)
        elif cuda and e.name in LAUNCHERS and holds_vocab(e.input_shapes, vocab):
            for k in e.kernels:                                   # counted by the kernel's own name: moved
                parts[named_part([k.name])] -= k.duration / 1e6
                add(e.name, 'loss/logits', k.duration / 1e6)
        elif not cuda and e.device_type == DeviceType.CPU: add(e.name, part_of(e, vocab), e.self_cpu_time_total / 1e6)
    return parts, sorted(((op, s, part) for (op, part), s in named.items() if s > 0), key=lambda r: -r[1])


def profile(args) -> dict:
    "Train `skip + steps` steps, profiling the last `steps`; the parts, top ops and step time."
    from torch.profiler import ProfilerActivity, schedule
    cuda = args.device == 'cuda'
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    model_cfg = SinkConfig.from_name(args.preset, backend=args.backend, block_size=max(args.T, 256))
    stamps = []
    prof = torch.profiler.profile(activities=activities, record_shapes=True,
                                  schedule=schedule(wait=args.skip - 1, warmup=1, active=args.steps, repeat=1))
    def step(n, model, loss):
        stamps.append(time.perf_counter())
        prof.step()
    with tempfile.TemporaryDirectory() as tmp, prof:
        cfg = train_settings(args, f'{tmp}/run', args.skip + args.steps, args.loss_chunk)
        train(model_cfg, cfg, callbacks=[step])
    wall = (stamps[-1] - stamps[args.skip - 1]) / args.steps
    parts, top = split(prof.events(), cuda, model_cfg.vocab_size)
    busy = sum(parts.values()) / args.steps
    return dict(step_s=wall, busy_s=busy, parts={k: v / args.steps for k, v in parts.items()},
                top=[dict(name=n, s_per_step=s / args.steps, part=p) for n, s, p in top[:args.top]])


def report(out:Output, r:dict, cuda:bool):
    "The parts' shares and the top ops, as lines."
    unit = 'CUDA' if cuda else 'CPU'
    out.say(f"step {r['step_s'] * 1e3:.1f} ms wall; {unit} self time {r['busy_s'] * 1e3:.1f} ms per step")
    whole = r['step_s'] if cuda else r['busy_s']
    out.say(f"{'part':>12} {'ms/step':>9} {'share %':>8}")
    for part, seconds in r['parts'].items(): out.say(f"{part:>12} {seconds * 1e3:>9.2f} {100 * seconds / whole:>8.1f}")
    if cuda: out.say(f"{'idle':>12} {(r['step_s'] - r['busy_s']) * 1e3:>9.2f} {100 * (1 - r['busy_s'] / whole):>8.1f}")
    out.say('')
    out.say(f"top {len(r['top'])} ops by {unit} self time")
    out.say(f"{'ms/step':>9} {'share %':>8} {'part':>12}  op")
    for row in r['top']:
        out.say(f"{row['s_per_step'] * 1e3:>9.2f} {100 * row['s_per_step'] / whole:>8.1f} {row['part']:>12}  "
                f"{row['name'][:90]}")


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--preset', default='tiny-cpu')
    p.add_argument('--backend', default='auto')
    p.add_argument('--T', type=int, default=64)
    p.add_argument('--batch', type=int, default=4)
    p.add_argument('--micro-batch', type=int, default=None)
    p.add_argument('--device', choices=['cpu', 'cuda'], default='cuda' if torch.cuda.is_available() else 'cpu')
    p.add_argument('--dtype', choices=['float32', 'bfloat16'], default=None,
                   help='default: bfloat16 autocast on CUDA, float32 on CPU')
    p.add_argument('--compile', action='store_true')
    p.add_argument('--loss-chunk', type=int, default=0,
                   help='tokens per chunk of the loss (TrainConfig.loss_chunk); 0: the plain loss from whole logits')
    p.add_argument('--skip', type=int, default=2, help='steps before the profiled ones (>= 1: compiling, warming)')
    p.add_argument('--steps', type=int, default=3, help='profiled steps')
    p.add_argument('--top', type=int, default=15, help='ops in the table')
    p.add_argument('--out', help='write the command, machine, load and tables to this text file')
    p.add_argument('--json', help='also write the figures to this JSON file')
    args = p.parse_args(argv)
    for flag in ('out', 'json'):
        folder = Path(getattr(args, flag) or '.').resolve().parent
        if not folder.is_dir(): p.error(f"--{flag}: the folder {folder} does not exist")
    if args.loss_chunk < 0: p.error(f"--loss-chunk must be 0 (the plain loss) or >= 1, got {args.loss_chunk}")
    for name in ('skip', 'steps', 'top', 'T', 'batch'):
        if getattr(args, name) < 1: p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.device == 'cuda' and not torch.cuda.is_available(): p.error('--device cuda: no CUDA device here')
    if args.device == 'cpu' and torch.cuda.is_available(): p.error('--device cpu: train() takes the GPU here; '
                                                                   'hide it with CUDA_VISIBLE_DEVICES=')
    return args


def main(argv=None) -> dict:
    args = parse(argv)
    out = Output('train_profile.py', argv)
    cuda = args.device == 'cuda'
    device = torch.cuda.get_device_name() if cuda else f'CPU ({os.cpu_count()} cores)'
    precision = args.dtype or ('bfloat16' if cuda else 'float32')
    out.say(f"train() profile: {args.preset}, batch={args.batch} x T={args.T}, {precision}"
            f"{' autocast' if precision == 'bfloat16' else ''}{', compiled' if args.compile else ''}, loss "
            f"{f'in chunks of {args.loss_chunk} tokens' if args.loss_chunk else 'from whole logits'}, {device}, "
            f"torch {torch.__version__}; {args.steps} steps profiled after {args.skip}")
    r = profile(args)
    report(out, r, cuda)
    out.write(args.out)
    if args.json:
        with open(args.json, 'w') as f: json.dump(out.record() | dict(device=device, args=vars(args)) | r, f, indent=1)
    return r


if __name__ == '__main__': main()
