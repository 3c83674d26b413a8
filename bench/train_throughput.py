"""Training throughput of `sink_nb.train.train` per preset × attention backend: tokens/s of whole optimiser steps
(data, forward, backward, clipping, AdamW) and MFU where the device's peak is known.

    python bench/train_throughput.py                                  # CPU: tiny-cpu, 14M, 60M at T=256
    python bench/train_throughput.py --presets 60M 160M 1B --T 2048 --batch 16 --compile   # on a GPU (bf16 autocast)

MFU = FLOPs per token · tokens/s / peak FLOP/s, FLOPs per token as nanoGPT counts them (`gpu_checks.flops_per_token`). Peaks: H100/H200 SXM bf16 dense
989 TFLOP/s, A100 312; pass --peak-tflops for another device (CPU: none, MFU not printed).
"""
import argparse, json, os, tempfile, time, warnings

import torch

from sink_nb.model import SinkConfig, SinkLM
from sink_nb.train import TrainConfig, train
from gpu_checks import PEAKS, flops_per_token
from bench_env import Output

warnings.filterwarnings('ignore', message='.*flex_attention called without torch.compile.*')


def peak_flops(override):
    if override: return override * 1e12
    if not torch.cuda.is_available(): return None
    name = torch.cuda.get_device_name()
    return next((v for k, v in PEAKS.items() if k in name), None)


def run(preset, backend, args):
    "Train for args.steps steps; time steps 2..N from a callback; return tokens/s."
    stamps = []
    model_cfg = SinkConfig.from_name(preset, backend=backend, block_size=max(args.T, 256))
    with tempfile.TemporaryDirectory() as tmp:
        cfg = TrainConfig(corpus='python-docs', tokenizer='bytes', corpus_args=dict(val_docs=8), seq_len=args.T, steps=args.steps, batch_size=args.batch,
                          micro_batch=args.micro_batch, val_blocks=8, probe_n=4, probe_T=min(64, args.T), eval_every=10**9, eval_batches=1,
                          checkpoint_every=10**9, warmup=1, compile=args.compile, progress=False, out_dir=f'{tmp}/run')
        try: train(model_cfg, cfg, callbacks=[lambda step, model, loss: stamps.append(time.perf_counter())])
        except ValueError as e:
            if 'cannot run' in str(e): return dict(error=str(e).split(': ', 1)[-1])
            raise
    steps = len(stamps) - 2                                          # the first two steps warm up (allocator, compile)
    seconds = (stamps[-1] - stamps[1]) / steps
    return dict(tokens_per_s=args.batch * args.T / seconds, step_s=seconds)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--presets', nargs='+', default=['tiny-cpu', '14M', '60M'])
    p.add_argument('--backends', nargs='+', default=['auto', 'eager', 'sdpa', 'chunked'])
    p.add_argument('--T', type=int, default=256)
    p.add_argument('--batch', type=int, default=4)
    p.add_argument('--micro-batch', type=int, default=None)
    p.add_argument('--steps', type=int, default=6)
    p.add_argument('--compile', action='store_true')
    p.add_argument('--peak-tflops', type=float, help='peak FLOP/s of the device in TFLOP/s, for MFU')
    p.add_argument('--out', help='write the command, machine, load and table to this text file')
    p.add_argument('--json', help='also write the rows to this JSON file')
    args = p.parse_args(argv)
    out = Output('train_throughput.py', argv)
    peak = peak_flops(args.peak_tflops)
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else f'CPU ({os.cpu_count()} cores)'
    out.say(f"train() throughput: batch={args.batch} x T={args.T}, {'bf16 autocast' if torch.cuda.is_available() else 'fp32'}"
          f"{', compiled' if args.compile else ''}, {device}, torch {torch.__version__}")
    header = f"{'preset':>9} {'backend':>8} {'params M':>9} {'tokens/s':>10} {'step s':>8} {'MFU %':>6}"
    out.say(header)
    out.say('-' * len(header))
    rows = []
    for preset in args.presets:
        with torch.device('meta'): n = SinkLM(SinkConfig.from_name(preset)).num_params(non_embedding=False)
        for backend in args.backends:
            r = run(preset, backend, args) | dict(preset=preset, backend=backend, params=n)
            r['flops_per_token'] = flops_per_token(SinkConfig.from_name(preset), args.T)
            if 'error' not in r and peak: r['mfu'] = r['flops_per_token'] * r['tokens_per_s'] / peak
            rows.append(r)
            if 'error' in r: out.say(f"{preset:>9} {backend:>8}   n/a: {r['error']}"); continue
            mfu = f"{100 * r['mfu']:>6.1f}" if 'mfu' in r else f"{'-':>6}"
            out.say(f"{preset:>9} {backend:>8} {n / 1e6:>9.1f} {r['tokens_per_s']:>10.0f} {r['step_s']:>8.3f} {mfu}")
    out.write(args.out)
    if args.json:
        with open(args.json, 'w') as f: json.dump(out.record() | dict(device=device, args=vars(args), rows=rows), f, indent=1)
    return rows


if __name__ == '__main__': main()
