"""Forward+backward throughput of SinkLM per preset × attention backend (and attention operation).

    python bench/model_speed.py                                   # CPU: tiny-cpu, 14M, 60M at T=256
    python bench/model_speed.py --device cuda --dtype bf16 --compile --presets 60M 160M 1B --T 2048 --batch 8

Backends that cannot serve a configuration on the device are listed with the reason instead of a number.
"""
import argparse, json, os, time, warnings

import torch
import torch.nn.functional as F

from sink_nb.attention import BACKENDS
from sink_nb.model import SinkConfig, SinkLM
from bench_env import Output

warnings.filterwarnings('ignore', message='.*flex_attention called without torch.compile.*')
DTYPES = {'fp32': torch.float32, 'bf16': torch.bfloat16, 'fp16': torch.float16}


def _peak_rss_gib():
    "Peak resident set of this process since the last reset (CPU: the whole process, model included)."
    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')) / 2**20


def step(model, idx, backend, dtype, device):
    with torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
        logits = model(idx, backend=backend)
        loss = F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), idx[:, 1:].flatten())
    loss.backward()
    return loss


def measure(preset, backend, args, device):
    torch.manual_seed(0)
    cfg = SinkConfig.from_name(preset, attention=args.attention, block_size=max(args.T, 256))
    model = SinkLM(cfg).to(device)
    fwd = torch.compile(model) if args.compile else model
    idx = torch.randint(0, cfg.vocab_size, (args.batch, args.T), device=device)
    dtype = DTYPES[args.dtype]
    try:
        for _ in range(2): model.zero_grad(set_to_none=True); step(fwd, idx, backend, dtype, device)   # warm-up, compile, allocator
    except ValueError as e:
        if 'cannot run' in str(e): return dict(error=str(e).split(': ', 1)[-1])
        raise
    if device.type == 'cuda': torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
    else: open('/proc/self/clear_refs', 'w').write('5')                          # reset the peak resident set
    times = []
    for _ in range(args.steps):                                                  # median step: robust to a noisy machine
        model.zero_grad(set_to_none=True); t0 = time.perf_counter()
        step(fwd, idx, backend, dtype, device)
        if device.type == 'cuda': torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    seconds = sorted(times)[len(times) // 2]
    peak = torch.cuda.max_memory_allocated() / 2**30 if device.type == 'cuda' else _peak_rss_gib()
    n = model.num_params(non_embedding=False)
    return dict(tokens_per_s=args.batch * args.T / seconds, step_s=seconds, peak_gib=peak, params_m=n / 1e6,
                chosen=_chosen(model, backend, args.T, device, dtype), tflops=6 * n * args.batch * args.T / seconds / 1e12)


def _chosen(model, backend, T, device, dtype):
    "The backend a training forward of T tokens runs on (what 'auto' resolved to)."
    with torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
        return model.backend_for(torch.empty(1, T, model.config.n_embd, device=device), requested=backend)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--presets', nargs='+', default=['tiny-cpu', '14M', '60M'])
    p.add_argument('--backends', nargs='+', default=['auto', 'eager', 'sdpa', 'flex', 'chunked', 'flash'], choices=('auto',) + BACKENDS)
    p.add_argument('--attention', default='softmax')
    p.add_argument('--T', type=int, default=256)
    p.add_argument('--batch', type=int, default=1)
    p.add_argument('--steps', type=int, default=5)
    p.add_argument('--device', default='cpu')
    p.add_argument('--dtype', default='fp32', choices=DTYPES)
    p.add_argument('--compile', action='store_true')
    p.add_argument('--out', help='write the command, machine, load and table to this text file')
    p.add_argument('--json', help='also write the rows to this JSON file')
    args = p.parse_args(argv)
    out = Output('model_speed.py', argv)
    device = torch.device(args.device)
    name = torch.cuda.get_device_name() if device.type == 'cuda' else f'CPU ({os.cpu_count()} cores)'
    out.say(f"SinkLM forward+backward: attention={args.attention}, batch={args.batch}, T={args.T}, {args.dtype}"
          f"{', compiled' if args.compile else ''}, {name}, torch {torch.__version__}")
    header = f"{'preset':>9} {'backend':>8} {'params M':>9} {'tokens/s':>10} {'step s':>8} {'TFLOP/s':>8} {'peak GiB':>9}"
    out.say(header)
    out.say('-' * len(header))
    rows = []
    for preset in args.presets:
        measure(preset, 'eager', argparse.Namespace(**(vars(args) | dict(steps=1, compile=False))), device)   # warm the allocator for this size
        for backend in args.backends:
            r = measure(preset, backend, args, device) | dict(preset=preset, backend=backend)
            rows.append(r)
            if 'error' in r: out.say(f"{preset:>9} {backend:>8}   n/a: {r['error']}")
            else:
                label = f"{backend}→{r['chosen']}" if backend == 'auto' else backend
                out.say(f"{preset:>9} {label:>8} {r['params_m']:>9.1f} {r['tokens_per_s']:>10.0f} {r['step_s']:>8.3f} "
                        f"{r['tflops']:>8.3f} {r['peak_gib']:>9.2f}")
    out.write(args.out)
    if args.json:
        with open(args.json, 'w') as f: json.dump(out.record() | dict(device=name, args=vars(args), rows=rows), f, indent=1)
    return rows


if __name__ == '__main__': main()
