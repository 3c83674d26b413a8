"""Every check that needs a GPU, in one run, with one results file: attention backends against eager in bf16, a bf16 +
torch.compile training run against fp32 over the same steps, the forward graph count under compile, and training
throughput with MFU. On a machine without CUDA it says what it skips and runs the same code on a tiny CPU model, so
the script itself is tested in CI.

    python bench/gpu_checks.py --out bench/results/gpu_checks.json          # on a GPU: the 60M preset
    python bench/gpu_checks.py --tiny                                        # anywhere: tiny-cpu, a few steps

`.ci/gpu` installs what a bare GPU machine lacks from local wheels and runs this after the `#| cuda` notebook cells.
"""
import argparse, json, math, platform, tempfile, time, warnings

import torch
import torch.nn.functional as F

from sink_nb.attention import BACKENDS, AttentionSpec, attend, unsupported_reason
from sink_nb.model import SinkConfig, SinkLM
from sink_nb.runs import Run
from sink_nb.train import TrainConfig, train

warnings.filterwarnings('ignore', message='.*flex_attention called without torch.compile.*')
PEAKS = {'H100': 989e12, 'H200': 989e12, 'A100': 312e12}                    # bf16 dense FLOP/s


def flops_per_token(cfg: SinkConfig, T: int) -> float:
    """Training FLOPs per token as nanoGPT and PaLM count them: 6 per weight that multiplies a token's activations
    (forward 2, backward 4) — every non-embedding weight and the output layer, n_embd × vocab_size, whose product makes
    the logits; not the input embedding, a row lookup — plus 12 · n_layer · n_embd · T for the attention scores."""
    with torch.device('meta'): weights = SinkLM(cfg).num_params(non_embedding=True) + cfg.n_embd * cfg.vocab_size
    return 6 * weights + 12 * cfg.n_layer * cfg.n_embd * T


MFU_FORMULA = ('MFU = FLOPs/token x tokens/s / peak FLOP/s; FLOPs/token = 6 x (non-embedding weights + output layer '
               'n_embd x vocab) + 12 x n_layer x n_embd x T')
CASES = {'causal': {}, 'window 128': dict(window=128), 'prefix 8': dict(prefix=8), 'K slot': 'slot',
         'sink logit': 'logit', 'softmax1': dict(op='softmax1')}


def parity(device, dtype, T, H=8, d=64, B=2) -> list[dict]:
    "Max |Δ| of every backend's output against eager (fp32 reference), per attention setting."
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, H, T, d, generator=g).to(device) for _ in range(3))
    rows = []
    for name, case in CASES.items():
        kw = dict(slot_k=torch.randn(H, d, generator=g).to(device)) if case == 'slot' else \
            dict(sink_logit=torch.randn(H, generator=g).to(device)) if case == 'logit' else {}
        spec = AttentionSpec(**case) if isinstance(case, dict) else AttentionSpec()
        ref, _ = attend(q, k, v, spec, backend='eager', **kw)
        for backend in BACKENDS:
            why = unsupported_reason(backend, spec, device=device, dtype=dtype, slot=bool(kw))
            if why:
                rows.append(dict(case=name, backend=backend, skipped=why))
                continue
            out, _ = attend(q.to(dtype), k.to(dtype), v.to(dtype), spec, backend=backend,
                            **{n: t.to(dtype) for n, t in kw.items()})
            rows.append(dict(case=name, backend=backend, dtype=str(dtype)[6:], max_abs_err=(out.float() - ref).abs().max().item()))
    return rows


def graphs(preset, device, T) -> dict:
    "Graphs and graph breaks of one compiled forward."
    model = SinkLM(SinkConfig.from_name(preset, block_size=max(T, 64))).to(device)
    explained = torch._dynamo.explain(model)(torch.randint(0, model.config.vocab_size, (1, T), device=device))
    torch._dynamo.reset()
    return dict(preset=preset, graphs=explained.graph_count, breaks=explained.graph_break_count)


def run(preset, dtype, compile, steps, T, batch, out, seed=0) -> dict:
    "Train `steps` steps on built-in text (byte tokens, the preset's vocabulary); losses, tokens/s over steps 3..N, MFU."
    stamps = []
    model_cfg = SinkConfig.from_name(preset, block_size=T)
    cfg = TrainConfig(corpus='python-docs', tokenizer='bytes', corpus_args=dict(val_docs=4), seq_len=T, steps=steps,
                      batch_size=batch, warmup=10, lr=1e-3, min_lr=1e-4, eval_every=max(1, steps // 4), eval_batches=1,
                      probe_n=4, checkpoint_every=10 ** 9, dtype=dtype, seed=seed, compile=compile, progress=False, out_dir=out)
    train(model_cfg, cfg, callbacks=[lambda step, model, loss: stamps.append(time.perf_counter())])
    seconds = stamps[-1] - stamps[2] if len(stamps) > 3 else float('nan')
    return dict(preset=preset, dtype=dtype, compile=compile, seed=seed, steps=steps, T=T, batch=batch,
                flops_per_token=flops_per_token(model_cfg, T),
                tokens_per_s=(len(stamps) - 3) * batch * T / seconds if len(stamps) > 3 else None,
                losses=[(r.step, r.val_loss) for r in Run(out).metrics()])


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--tiny', action='store_true', help='tiny-cpu, few steps: a smoke test of the script anywhere')
    p.add_argument('--steps', type=int, default=200)
    p.add_argument('--T', type=int, default=2048)
    p.add_argument('--batch', type=int, default=8)
    p.add_argument('--out', default='gpu_checks.json')
    p.add_argument('--parity-only', action='store_true', help='only the backends against eager (a new backend: flash)')
    args = p.parse_args()
    cuda = torch.cuda.is_available()
    device = torch.device('cuda' if cuda else 'cpu')
    preset, steps, T, batch = ('tiny-cpu', 6, 64, 4) if args.tiny or not cuda else ('60M', args.steps, args.T, args.batch)
    report = dict(device=torch.cuda.get_device_name() if cuda else platform.processor() or 'cpu', torch=torch.__version__,
                  preset=preset, skipped=[])
    if not cuda: report['skipped'] += ['no CUDA device: bf16 parity, FlexAttention compiled, flash, MFU and the 60M runs '
                                       'ran as a tiny CPU smoke test instead']
    save = lambda: json.dump(report, open(args.out, 'w'), indent=1)      # after each part: a killed run keeps the rest
    report['parity'] = parity(device, torch.bfloat16 if cuda else torch.float32, 256 if cuda else 32)
    save()
    if args.parity_only: return _print(report, args.out)
    report['compile_graphs'] = graphs(preset, device, 64)
    save()
    report['runs'] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (dtype, compiled, seed) in enumerate([('bf16' if cuda else 'fp32', cuda, 0), ('fp32', False, 0), ('fp32', False, 1)]):
            report['runs'].append(run(preset, dtype, compiled, steps, T, batch, f'{tmp}/run{i}', seed))
            print(f"  ran {dtype} compile={compiled} seed={seed}", flush=True)
            save()
    fast, fp32, fp32_seed1 = (r['losses'][-1][1] for r in report['runs'])
    report['loss_gap'], report['seed_noise'] = abs(fp32 - fast), abs(fp32 - fp32_seed1)
    peak = next((v for k, v in PEAKS.items() if cuda and k in report['device']), None)
    if peak: report['mfu'] = report['runs'][0]['flops_per_token'] * report['runs'][0]['tokens_per_s'] / peak
    elif cuda: report['skipped'].append(f"MFU: no known bf16 peak for {report['device']}")
    if cuda and torch.cuda.device_count() < 2: report['skipped'].append('2-process FSDP: needs 2 GPUs')
    save()
    _print(report, args.out)


def _print(report:dict, out:str):
    "What the checks found, as the JSON at `out` holds it (the parts that ran)."
    print(f"device {report['device']}, torch {report['torch']}, preset {report['preset']}")
    for r in report['parity']:
        print(f"  {r['case']:<11} {r['backend']:<8} " + (f"max |Δ| {r['max_abs_err']:.2e}" if 'max_abs_err' in r else f"skipped: {r['skipped']}"))
    if 'compile_graphs' in report: print(f"  compiled forward: {report['compile_graphs']}")
    for r in report.get('runs', []):
        print(f"  {r['dtype']} compile={r['compile']} seed={r['seed']}: final val loss {r['losses'][-1][1]:.4f}, "
              f"{r['tokens_per_s'] or float('nan'):.0f} tokens/s")
    if 'loss_gap' in report:
        print(f"  |Δ final val loss| bf16 vs fp32 = {report['loss_gap']:.4f}, fp32 seed 0 vs 1 = "
              f"{report['seed_noise']:.4f}" + (f"; MFU {report['mfu']:.1%} ({MFU_FORMULA})" if 'mfu' in report else ''))
    for s in report['skipped']: print(f"  skipped: {s}")
    print(f"wrote {out}")

if __name__ == '__main__': main()
