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
             f"a fresh process; `{command(results, 'metric_memory')}`:", '',
             '| T | eager MiB | chunked MiB | memory ratio | eager s | chunked s | max \\|Δα\\| |', '|---|---|---|---|---|---|---|']
    lines += [f"| {r['T']} | {r['eager_mib']:.0f} | {r['chunked_mib']:.0f} | {_ratio(r['ratio'])} | {r['eager_s']:.2f} | "
              f"{r['chunked_s']:.2f} | {r['max_delta']:.1e} |" for r in d['rows']]
    return '\n'.join(lines)


def peers_train(results:Path) -> str:
    "One training step of SinkLM against transformers' Llama and litgpt's GPT at one shape, from peers_train_cpu.json."
    d = json.loads((results / 'peers_train_cpu.json').read_text())
    lines = [f"{d['machine']}; `{command(results, 'peers_train')}`:", '',
             '| preset | sink_nb tok/s | transformers tok/s | litgpt tok/s | ÷ transformers | ÷ litgpt | peak MiB (sink_nb / transformers / litgpt) |',
             '|---|---|---|---|---|---|---|']
    for r in d['rows']:
        t, m = r['tokens_per_s'], r['peak_mib']
        lines.append(f"| `{r['preset']}` | {t['sink_nb']:,.0f} | {t['transformers']:,.0f} | {t['litgpt']:,.0f} | "
                     f"{t['sink_nb'] / t['transformers']:.2f}× | {t['sink_nb'] / t['litgpt']:.2f}× | "
                     f"{m['sink_nb']:,.0f} / {m['transformers']:,.0f} / {m['litgpt']:,.0f} |")
    return '\n'.join(lines)


def verbatim(name:str):
    "A results text file as it is: its own header lines say what was run, on what, with which command."
    def render(results:Path) -> str:
        return f'`bench/results/{name}_cpu.txt`:\n\n```\n' + (results / f'{name}_cpu.txt').read_text().rstrip() + '\n```'
    render.__doc__ = f'bench/results/{name}_cpu.txt, verbatim.'
    return render


RENDERERS = {'metric_memory': metric_memory, 'peers_train': peers_train} | {
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
