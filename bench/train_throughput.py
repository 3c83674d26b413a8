"""Training throughput of `sink_nb.train.train` per preset × attention backend: tokens/s of whole optimiser steps
(data, forward, backward, clipping, AdamW) and MFU where the device's peak is known.

    python bench/train_throughput.py                                  # CPU: tiny-cpu, 14M, 60M at T=256
    python bench/train_throughput.py --presets 60M 160M 1B --T 2048 --batch 16 --compile   # on a GPU (bf16 autocast)
    python bench/train_throughput.py --presets 60M --T 2048 --batch 16 --compile --loss-chunk 0 8192
                                      # the plain loss (0) and the loss in chunks of 8,192 tokens (TrainConfig.loss_chunk)

MFU = FLOPs per token · tokens/s / peak FLOP/s (`gpu_checks.MFU_FORMULA`, printed above the table). FLOPs per token
(`gpu_checks.flops_per_token`) as nanoGPT and PaLM count them: 6 per weight that multiplies a token's activations,
forward and backward — every non-embedding weight and the output layer (n_embd × vocab_size: the logits are a matrix
product), not the input embedding (a row lookup) — plus the attention scores, 12 · n_layer · n_embd · T. The paper's
"60M" counts the non-embedding weights alone (59.0M for the 60M preset; `SinkLM.num_params()`); `params M` in the table
is every parameter (136.5M with both 38.7M embedding tables). Peaks: H100/H200 SXM bf16 dense 989 TFLOP/s, A100 312;
pass --peak-tflops for another device (CPU: none, MFU not printed).
"""
import argparse, itertools, json, os, tempfile, time, warnings

import torch

from sink_nb.model import SinkConfig, SinkLM
from sink_nb.train import TrainConfig, train
from gpu_checks import MFU_FORMULA, PEAKS, flops_per_token
from bench_env import Output

warnings.filterwarnings('ignore', message='.*flex_attention called without torch.compile.*')


def peak_flops(override):
    if override: return override * 1e12
    if not torch.cuda.is_available(): return None
    name = torch.cuda.get_device_name()
    return next((v for k, v in PEAKS.items() if k in name), None)


DTYPES = {None: 'auto', 'float32': 'fp32', 'bfloat16': 'bf16'}


def train_settings(args, out_dir:str, steps:int, loss_chunk:int|None=None) -> TrainConfig:
    "The run both benchmarks time: built-in text, byte tokens, no evaluation or checkpoint after the start."
    return TrainConfig(corpus='python-docs', tokenizer='bytes', corpus_args=dict(val_docs=8), seq_len=args.T, steps=steps,
                       batch_size=args.batch, micro_batch=args.micro_batch, val_blocks=8, probe_n=4,
                       probe_T=min(64, args.T), eval_every=10**9, eval_batches=1, checkpoint_every=10**9, warmup=1,
                       compile=args.compile, dtype=DTYPES[getattr(args, 'dtype', None)],
                       loss_chunk=loss_chunk or None, progress=False, out_dir=out_dir)


def run(preset, backend, args, loss_chunk=None):
    "Train for args.steps steps; time steps 2..N from a callback; return tokens/s."
    stamps = []
    model_cfg = SinkConfig.from_name(preset, backend=backend, block_size=max(args.T, 256))
    with tempfile.TemporaryDirectory() as tmp:
        cfg = train_settings(args, f'{tmp}/run', args.steps, loss_chunk)
        try: train(model_cfg, cfg, callbacks=[lambda step, model, loss: stamps.append(time.perf_counter())])
        except ValueError as e:
            if 'cannot run' in str(e): return dict(error=str(e).split(': ', 1)[-1])
            raise
    steps = len(stamps) - 2                                          # the first two steps warm up (allocator, compile)
    seconds = (stamps[-1] - stamps[1]) / steps
    peak = torch.cuda.max_memory_allocated() / 2 ** 30 if torch.cuda.is_available() else None
    return dict(tokens_per_s=args.batch * args.T / seconds, step_s=seconds, peak_gib=peak)


def row_line(r:dict) -> str:
    "A row of the table."
    loss = f"chunk {r['loss_chunk']}" if r['loss_chunk'] else 'plain'
    start = f"{r['preset']:>9} {r['backend']:>8} {loss:>9}"
    if 'error' in r: return f"{start}   n/a: {r['error']}"
    mfu = f"{100 * r['mfu']:>6.1f}" if 'mfu' in r else f"{'-':>6}"
    memory = f"{r['peak_gib']:>8.2f}" if r['peak_gib'] is not None else f"{'-':>8}"
    return (f"{start} {r['params'] / 1e6:>9.1f} {r['non_embedding_params'] / 1e6:>9.1f} {r['flops_per_token'] / 1e9:>9.3f} "
            f"{r['tokens_per_s']:>10.0f} {r['step_s']:>8.3f} {memory} {mfu}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--presets', nargs='+', default=['tiny-cpu', '14M', '60M'])
    p.add_argument('--backends', nargs='+', default=['auto', 'eager', 'sdpa', 'chunked'])
    p.add_argument('--T', type=int, default=256)
    p.add_argument('--batch', type=int, default=4)
    p.add_argument('--micro-batch', type=int, default=None)
    p.add_argument('--steps', type=int, default=6)
    p.add_argument('--compile', action='store_true')
    p.add_argument('--loss-chunk', nargs='+', type=int, default=[0],
                   help='tokens per chunk of the loss (TrainConfig.loss_chunk), one row each; 0: the plain loss')
    p.add_argument('--peak-tflops', type=float, help='peak FLOP/s of the device in TFLOP/s, for MFU')
    p.add_argument('--out', help='write the command, machine, load and table to this text file')
    p.add_argument('--json', help='also write the rows to this JSON file')
    args = p.parse_args(argv)
    if any(c < 0 for c in args.loss_chunk): p.error(f"--loss-chunk: 0 (the plain loss) or tokens >= 1, got {args.loss_chunk}")
    out = Output('train_throughput.py', argv)
    peak = peak_flops(args.peak_tflops)
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else f'CPU ({os.cpu_count()} cores)'
    out.say(f"train() throughput: batch={args.batch} x T={args.T}, {'bf16 autocast' if torch.cuda.is_available() else 'fp32'}"
            f"{', compiled' if args.compile else ''}, {device}, torch {torch.__version__}")
    out.say(MFU_FORMULA)
    header = (f"{'preset':>9} {'backend':>8} {'loss':>9} {'params M':>9} {'non-emb M':>9} {'GFLOP/tok':>9} "
              f"{'tokens/s':>10} {'step s':>8} {'peak GiB':>8} {'MFU %':>6}")
    out.say(header)
    out.say('-' * len(header))
    rows = []
    for preset in args.presets:
        with torch.device('meta'): model = SinkLM(SinkConfig.from_name(preset))
        n, non_embedding = model.num_params(non_embedding=False), model.num_params()
        for backend, chunk in itertools.product(args.backends, args.loss_chunk):
            if torch.cuda.is_available(): torch.cuda.reset_peak_memory_stats()
            r = run(preset, backend, args, chunk) | dict(preset=preset, backend=backend, loss_chunk=chunk or None,
                                                         params=n, non_embedding_params=non_embedding)
            r['flops_per_token'] = flops_per_token(SinkConfig.from_name(preset), args.T)
            if 'error' not in r and peak: r['mfu'] = r['flops_per_token'] * r['tokens_per_s'] / peak
            rows.append(r)
            out.say(row_line(r))
    out.write(args.out)
    if args.json:
        with open(args.json, 'w') as f: json.dump(out.record() | dict(device=device, args=vars(args), rows=rows), f, indent=1)
    return rows


if __name__ == '__main__': main()
