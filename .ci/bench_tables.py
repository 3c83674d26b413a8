"""Benchmark figures in the README and the docs, written from the results files they cite, never by hand.

A markdown cell of a notebook in nbs/ holds a block between `<!-- bench: NAME -->` and `<!-- /bench -->`; this script
rewrites each block from `bench/results/`, with the command that made the file. `--check` exits 1 when a block is not
what its file gives now (CI runs it, so a table cannot go stale); a block naming no results file is an error.
    python .ci/bench_tables.py            # rewrite the blocks, then `python .ci/readme.py` for the README
    python .ci/bench_tables.py --check
"""
import json, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r'(<!-- bench: ([\w-]+) -->\n)(.*?)(<!-- /bench -->)', re.S)


def command(results:Path, name:str) -> str:
    "The command a results file was made with: the `$ ...` line of its text file (the first line that is one)."
    txt = results / f'{name}_cpu.txt'
    for line in txt.read_text().splitlines() if txt.exists() else []:
        if line.startswith('$ '): return line[2:].strip()
        if line.startswith('command: '): return line[len('command: '):].strip()
    return f'see bench/results/{name}_cpu.txt'


def _ratio(x:float) -> str: return f'{x:.1f}×' if x < 100 else f'{x:.0f}×'


def metric_memory(results:Path) -> str:
    "The metric's memory and time against eager, per T, from metric_memory_cpu.json."
    d = json.loads((results / 'metric_memory_cpu.json').read_text())
    lines = [f"{d['device']}, op {d['op']}, {d['heads']} heads, d_h = {d['d_head']}, batch {d['batch']}, first call in "
             f"a fresh process; {_where(d)}; `{command(results, 'metric_memory')}`:", '',
             '| T | eager MiB | chunked MiB | memory ratio | eager s | chunked s | max \\|Δα\\| |', '|---|---|---|---|---|---|---|']
    lines += [f"| {r['T']} | {r['eager_mib']:.0f} | {r['chunked_mib']:.0f} | {_ratio(r['ratio'])} | {r['eager_s']:.2f} | "
              f"{r['chunked_s']:.2f} | {r['max_delta']:.1e} |" for r in d['rows']]
    return '\n'.join(lines)


def peers_train(results:Path) -> str:
    """One training step of SinkLM against transformers' Llama and litgpt's GPT at one shape, from peers_train_cpu.json:
    tokens/s the median over rounds, each ratio the median of the rounds' own ratios with its range."""
    d = json.loads((results / 'peers_train_cpu.json').read_text())
    lines = [f"{d['title']}; {_where(d)}; `{command(results, 'peers_train')}`:", '',
             '| preset | sink_nb tok/s | transformers tok/s | litgpt tok/s | ÷ transformers (range, rounds) | ÷ litgpt (range, rounds) | peak MiB (sink_nb / transformers / litgpt) |',
             '|---|---|---|---|---|---|---|']
    for r in d['rows']:
        t, m, q = r['tokens_per_s'], r['peak_mib'], r['speed_ratio']
        lines.append(f"| `{r['preset']}` | {t['sink_nb']:,.0f} | {t['transformers']:,.0f} | {t['litgpt']:,.0f} | "
                     f"{_spread(q['transformers'])} | {_spread(q['litgpt'])} | "
                     f"{m['sink_nb']:,.0f} / {m['transformers']:,.0f} / {m['litgpt']:,.0f} |")
    return '\n'.join(lines)


def _spread(s:dict) -> str: return f"{s['median']:.2f}× ({s['min']:.2f}–{s['max']:.2f}, {s['n']})"


def _where(d:dict) -> str:
    "The machine and the load a JSON results file records (bench/bench_env.record)."
    m, load = d['machine'], d['load']
    return (f"{m['cpu']}, {m['cores']} cores, torch {d['versions']['torch']}; 1-min load {load['before'][0]:.2f} before, "
            f"{load['after'][0]:.2f} after")


def gpu(results:Path) -> str:
    "The one GPU session's figures, from bench/results/gpu/ (`bash .ci/gpu` on a lent machine): one row per check."
    g = results / 'gpu'
    machine = (g / 'machine.txt').read_text().splitlines()[0]
    tp = json.loads((g / 'train_throughput.json').read_text())
    peers = json.loads((g / 'peers_train.json').read_text())['rows'][0]
    checks = json.loads((g / 'gpu_checks.json').read_text())
    errs = [r['max_abs_err'] for r in checks['parity'] if 'max_abs_err' in r]
    long_lines = (g / 'measure_long.txt').read_text().splitlines()
    long_row = next(l.split() for l in long_lines if l.strip().startswith('8192'))
    maps = float(long_row[13])                  # GiB: bench/measure_speed.py counts the maps at 4 bytes (fp32) a weight
    maps_text = (f"{maps / 2:g} GiB of eager maps in bf16 (the file's {maps:g} GiB counts them in fp32)"
                 if 'bfloat16' in long_lines[0] else f"{maps:g} GiB of eager maps")
    train = [l.split(',') for l in (g / 'train_60m_metrics.csv').read_text().splitlines()[1:]]
    cells = (g / 'cuda_cells.txt').read_text()
    t, a = peers['tokens_per_s'], tp['args']
    same = all(len({r['max_abs_err'] for r in checks['parity'] if r['case'] == c and 'max_abs_err' in r}) == 1
               for c in {r['case'] for r in checks['parity']})
    rows = [f"| each attention backend in bf16 against eager in fp32, T 256, 6 settings | max \\|Δ\\| {min(errs):.4f}–"
            f"{max(errs):.4f} over {len(errs)} backend × setting pairs"
            + ("; within a setting every backend, eager in bf16 too, gives the same \\|Δ\\|: bf16's rounding" if same else '')
            + "; flash skipped (not installed) | `gpu_checks.json` |",
            f"| compiled 60M forward | {checks['compile_graphs']['graphs']} graph, {checks['compile_graphs']['breaks']} "
            "breaks; the bf16 + compile vs fp32 training runs did not finish in the 90 s limit | `gpu_checks.json` |"]
    loss = lambda r: f", the loss in chunks of {r['loss_chunk']:,} tokens" if r.get('loss_chunk') else ''
    rows += [f"| `train()` 60M, bf16 + compile, {r['backend']}{loss(r)}, {a['batch']} × {a['T']}, steps 3–{a['steps']} | "
             f"{r['tokens_per_s']:,.0f} tokens/s, MFU {100 * r['mfu']:.1f} % of 989 TFLOP/s (goal ≥ 40 %) | "
             "`train_throughput.json` |" for r in tp['rows']]
    rows.append(f"| one AdamW step, 60M, bf16 + compile, 8 × 2048 | sink_nb {t['sink_nb']:,.0f}, transformers "
                f"{t['transformers']:,.0f}, litgpt {t['litgpt']:,.0f} tokens/s: {t['sink_nb'] / t['transformers']:.2f}× "
                f"transformers, {t['sink_nb'] / t['litgpt']:.2f}× litgpt | `peers_train.json` |")
    rows.append(f"| `hf.measure_ids`, SmolLM2-135M's shape (random weights), bf16, T 8,192 | {long_row[2]} s against "
                f"{long_row[1]} s for the forward ({long_row[3]}); {long_row[11]} GiB added at peak against "
                f"{maps_text}; T 32,768 did not finish in the second call's 80 s limit (the first call stopped at "
                "T 8,192 on a device error) | `measure_long.txt` |")
    rows.append(f"| `sink-nb train --config 60m-default vocab_size=4096`, {train[-1][0]} steps × 32 × 2048 "
                f"({int(train[-1][1]) / 1e6:.1f}M tokens, about two passes over 3.2M tokens of experiment 10's Debian corpus) "
                f"| val loss {float(train[0][4]):.3f} → {float(train[-1][4]):.3f}, Sink₁ "
                f"{float(train[-1][6]):.1f} % | `train_60m_metrics.csv` |")
    rows.append("| `torchrun --nproc_per_node 1`: an NCCL all-reduce, and `sink-nb train` | both ran (one process: "
                "no DDP wrapper) | `torchrun.txt` |")
    rows.append("| the notebooks' cells flagged cuda | " + ', '.join(f"{nb}: {how}" for nb, how in _cells(cells))
                + " | `cuda_cells.txt` |")
    return '\n'.join([f"{machine}; `bash .ci/gpu` (two calls), files in `bench/results/gpu/`:", '',
                      '| check | result | file |', '|---|---|---|', *rows])


def _cells(text:str) -> list[tuple[str, str]]:
    "(notebook, what happened) per notebook in cuda_cells.txt: nbdev's Success, its list of failures, or neither."
    parts = text.split('#| cuda cells of ')[1:]
    how = lambda p: 'passed' if 'Success.' in p else 'failed' if 'Tests Failed' in p else 'stopped by its time limit'
    return [(p.splitlines()[0].split('/')[-1], how(p)) for p in parts]


def verbatim(name:str):
    "A results text file as it is: its own header lines say what was run, on what, with which command."
    def render(results:Path) -> str:
        return f'`bench/results/{name}_cpu.txt`:\n\n```\n' + (results / f'{name}_cpu.txt').read_text().rstrip() + '\n```'
    render.__doc__ = f'bench/results/{name}_cpu.txt, verbatim.'
    return render


RENDERERS = {'metric_memory': metric_memory, 'peers_train': peers_train, 'gpu': gpu} | {
    n: verbatim(n) for n in ('peers_measure', 'peers_kv', 'peers_explorer', 'long_context', 'measure_vs_reference',
                             'measure_speed', 'model_speed', 'train_throughput', 'peers_train_profile', 'charts', 'demo_time',
                             'report_time')}


def rewrite(text:str, results:Path) -> str:
    "`text` with every bench block rewritten from `results`; an unknown block name is an error."
    def block(m):
        if m.group(2) not in RENDERERS:
            raise SystemExit(f"bench block {m.group(2)!r}: no renderer; known: {sorted(RENDERERS)}")
        return m.group(1) + RENDERERS[m.group(2)](results) + '\n' + m.group(4)
    return BLOCK.sub(block, text)


def notebooks(root:Path) -> list[Path]: return sorted((root / 'nbs').glob('*.ipynb'))


def main(argv, root:Path=ROOT) -> int:
    results, stale = root / 'bench' / 'results', []
    for path in notebooks(root):
        nb = json.loads(path.read_text())
        changed = False
        for cell in (c for c in nb['cells'] if c['cell_type'] == 'markdown'):
            src = ''.join(cell['source'])
            if '<!-- bench:' not in src or (new := rewrite(src, results)) == src: continue
            stale.append(path.name); cell['source'] = new.splitlines(keepends=True); changed = True
        if changed and '--check' not in argv:
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + '\n'); print(f'rewrote {path.name}')
    if '--check' in argv and stale:
        print(f"benchmark tables differ from bench/results in {sorted(set(stale))}: run `python .ci/bench_tables.py` "
              f"and `python .ci/readme.py`, and commit them"); return 1
    if '--check' in argv: print('benchmark tables match bench/results')
    return 0


if __name__ == '__main__': sys.exit(main(sys.argv[1:]))
