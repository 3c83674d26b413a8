"""Peak memory and time of the sink metric: the reference method (eager T×T weights + `importance`) versus
`importance_from_qk` (never T×T: chunks of query rows, or for softmax in float32 on CPU flash-kernel passes of a few
heads each, `metrics.flash_passes`), on the same q and k. Each method runs in its own process.

    python bench/metric_memory.py                      # T = 512 … 8192, 16 heads, d_h 64, CPU
    python bench/metric_memory.py --T 1024 4096 --device cuda --op sigmoid

Peak memory is what the method adds on top of its inputs: on CPU the rise of the process's peak resident set
(VmHWM, reset through /proc/self/clear_refs just before the call); on CUDA `max_memory_allocated`. By default the
call is the process's first (what a user's process sees: kernel and thread-pool buffers included); `--warm` runs a
small warm-up call first and so measures the method alone.
"""
import argparse, json, math, os, subprocess, sys, tempfile, time
from pathlib import Path

import torch

from bench_env import Output

METHODS = ('eager', 'chunked')


def _rss_kib(field='VmRSS'):
    for line in open('/proc/self/status'):
        if line.startswith(field + ':'): return int(line.split()[1])
    raise RuntimeError(f'{field} not in /proc/self/status')


class PeakMemory:
    "Bytes a block of code adds at its peak: CUDA allocator statistics, or the resident-set high-water mark on CPU."
    def __init__(self, device): self.device = device
    def __enter__(self):
        if self.device.type == 'cuda':
            torch.cuda.synchronize(); torch.cuda.reset_peak_memory_stats()
            self.base = torch.cuda.memory_allocated()
        else:
            open('/proc/self/clear_refs', 'w').write('5')          # reset VmHWM to the current RSS
            self.base = _rss_kib() * 1024
        return self
    def __exit__(self, *exc):
        if self.device.type == 'cuda': torch.cuda.synchronize(); self.peak = torch.cuda.max_memory_allocated() - self.base
        else: self.peak = _rss_kib('VmHWM') * 1024 - self.base


def make_qk(T, heads, d_head, batch, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, T, d_head, generator=g)
    k = torch.randn(batch, heads, T, d_head, generator=g)
    k[..., 0, :] += 2.0                                          # a mild first-token bias so α is not flat
    return q.to(device), k.to(device)


def eager_alpha(q, k, op):
    "The reference method: materialise every (T, T) matrix, then α. Softmax is written out as eager attention does."
    from sink_nb.attention import attention_weights
    from sink_nb.metrics import importance
    if op != 'softmax': return importance(attention_weights(q, k, op=op))
    T = q.shape[-2]
    scores = (q @ k.transpose(-1, -2)).mul_(1 / math.sqrt(q.shape[-1]))                 # (B, H, T, T)
    scores.masked_fill_(torch.ones(T, T, dtype=torch.bool, device=q.device).triu_(1), float('-inf'))
    return importance(scores.softmax(-1))


def chunked_alpha(q, k, op):
    from sink_nb.metrics import importance_from_qk
    return importance_from_qk(q, k, op=op)


def worker(args):
    "Run one method once (after a small warm-up) and print its peak memory and time as JSON."
    device = torch.device(args.device)
    torch.set_num_threads(args.threads) if args.threads else None
    fn = eager_alpha if args.worker == 'eager' else chunked_alpha
    if args.warm: fn(*make_qk(64, args.heads, args.d_head, args.batch, device), args.op)   # kernels, thread pools
    q, k = make_qk(args.T[0], args.heads, args.d_head, args.batch, device)
    with PeakMemory(device) as mem:
        t0 = time.perf_counter()
        alpha = fn(q, k, args.op)
        if device.type == 'cuda': torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
    torch.save(alpha.cpu(), args.alpha_out)
    print(json.dumps({'peak_bytes': mem.peak, 'seconds': seconds}))


def run_method(method, T, args, alpha_out):
    cmd = [sys.executable, __file__, '--worker', method, '--T', str(T), '--heads', str(args.heads), '--d-head', str(args.d_head),
           '--batch', str(args.batch), '--device', args.device, '--op', args.op, '--alpha-out', alpha_out]
    if args.threads: cmd += ['--threads', str(args.threads)]
    if args.warm: cmd += ['--warm']
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode: raise RuntimeError(f'{method} at T={T} failed:\n{out.stderr[-2000:]}')
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--T', type=int, nargs='+', default=[512, 1024, 2048, 4096, 8192])
    p.add_argument('--heads', type=int, default=16)
    p.add_argument('--d-head', type=int, default=64)
    p.add_argument('--batch', type=int, default=1)
    p.add_argument('--device', default='cpu')
    p.add_argument('--op', default='softmax')
    p.add_argument('--threads', type=int, default=0, help='torch threads per worker (0: torch default)')
    p.add_argument('--warm', action='store_true', help='a small warm-up call first (default: the first call, cold)')
    p.add_argument('--out', help='write the command, machine, load and table to this text file')
    p.add_argument('--json', help='also write the rows to this JSON file')
    p.add_argument('--worker', choices=METHODS, help=argparse.SUPPRESS)
    p.add_argument('--alpha-out', help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker: return worker(args)

    dev = torch.cuda.get_device_name() if args.device.startswith('cuda') else f'CPU ({os.cpu_count()} cores)'
    out = Output('metric_memory.py', argv)
    out.say(f'sink metric memory: op={args.op}, batch={args.batch}, heads={args.heads}, d_h={args.d_head}, '
          f"{'after a warm-up call' if args.warm else 'first call in a fresh process'}, {dev}, torch {torch.__version__}")
    header = f"{'T':>6} {'eager MiB':>10} {'chunked MiB':>11} {'mem ratio':>10} {'eager s':>8} {'chunked s':>9} {'max |Δα|':>10}"
    out.say(header)
    out.say('-' * len(header))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for T in args.T:
            res = {m: run_method(m, T, args, f'{tmp}/{m}-{T}.pt') for m in METHODS}
            delta = (torch.load(f'{tmp}/eager-{T}.pt') - torch.load(f'{tmp}/chunked-{T}.pt')).abs().max().item()
            e, s = res['eager'], res['chunked']
            row = dict(T=T, eager_mib=e['peak_bytes'] / 2**20, chunked_mib=s['peak_bytes'] / 2**20,
                       ratio=e['peak_bytes'] / max(s['peak_bytes'], 1), eager_s=e['seconds'], chunked_s=s['seconds'], max_delta=delta)
            rows.append(row)
            out.say(f"{T:>6} {row['eager_mib']:>10.1f} {row['chunked_mib']:>11.1f} {row['ratio']:>9.1f}x "
                    f"{row['eager_s']:>8.2f} {row['chunked_s']:>9.2f} {delta:>10.1e}")
    out.write(args.out)
    if args.json: Path(args.json).write_text(json.dumps(out.record() | {'device': dev, 'op': args.op, 'heads': args.heads,
                                                         'd_head': args.d_head, 'batch': args.batch, 'rows': rows}, indent=1))
    return rows


if __name__ == '__main__': main()
