"""Python-side latency of `SinkExplorer` per control change: the new α slice, the rebuilt Altair charts and the
JupyterChart specs, end to end, on a random SinkResult of the size of a 7B model (L=32, H=32, T=1024).

    python bench/explorer_latency.py                       # N=4, L=32, H=32, T=1024; writes bench/results/explorer_latency_cpu.txt
    python bench/explorer_latency.py --L 4 --H 4 --T 64 --out /tmp/lat.txt

The pattern source returns a full T×T causal softmax pattern (what a cached `pattern_from_model` holds), so the
explorer's slicing to the first 128 positions is part of the time. The browser's redraw is not included.
--out gets the command, the machine, the versions and the load average before and after (`bench_env`), then the table.
"""
import argparse, json, statistics, sys, time
from pathlib import Path

import torch

from bench_env import Output

ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 100
PACKAGES = ('altair', 'ipywidgets', 'anywidget', 'pandas')              # what builds the charts and their specs
CONTROLS = ('layer', 'head', 'eps', 'k', 'sample')


def random_result(N, L, H, T, seed=0):
    "A SinkResult with sink-like α: a first-token spike in some heads, a 1/(T-j)-flat rest, and token strings."
    from sink_nb.results import SinkResult
    g = torch.Generator().manual_seed(seed)
    alpha = torch.rand(N, L, H, T, generator=g) * 0.05
    alpha[..., 0] = torch.rand(N, L, H, generator=g)
    return SinkResult(alpha, [[f's{n}t{i}' for i in range(T)] for n in range(N)], f'random-L{L}-H{H}-T{T}')


def causal_pattern(T, seed=0):
    g = torch.Generator().manual_seed(seed)
    s = torch.randn(T, T, generator=g).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float('-inf'))
    s[:, 0] += 4                                                          # a sink on the first token
    return torch.softmax(s, -1)


def values_for(ex, control, i):
    "The i-th value a control steps through: always a change from the current value."
    if control == 'layer': return (ex.layer.value + 1) % (ex.layer.max + 1)
    if control == 'head': return (ex.head.value + 1) % (ex.head.max + 1)
    if control == 'eps': return round(0.2 + 0.05 * (i % 10), 2) if round(0.2 + 0.05 * (i % 10), 2) != ex.eps.value else 0.15
    if control == 'k': return 1 + (ex.k.value % min(ex.k.max, 8))
    if control == 'sample': return (ex.sample.value + 2) % (ex.result.N + 1) - 1      # cycles -1 (all), 0, 1, ...


def spec_bytes(ex, views):
    return sum(len(json.dumps(ex.charts[v].spec)) for v in views)


def run(N, L, H, T, repeats):
    from sink_nb.explore import SinkExplorer, CONTROL_VIEWS
    res, pat = random_result(N, L, H, T), causal_pattern(T)
    t0 = time.perf_counter()
    ex = SinkExplorer(res, pattern=lambda s, l, h: pat, offline=False)
    build_ms = 1000 * (time.perf_counter() - t0)
    rows = []
    for control in CONTROLS:
        widget, times = getattr(ex, control), []
        widget.value = values_for(ex, control, 0)                          # warm-up
        for i in range(repeats):
            v = values_for(ex, control, i + 1)
            t = time.perf_counter(); widget.value = v; times.append(1000 * (time.perf_counter() - t))
        rows.append(dict(control=control, views=list(CONTROL_VIEWS[control]), median_ms=statistics.median(times), max_ms=max(times),
                         spec_kib=spec_bytes(ex, CONTROL_VIEWS[control]) / 1024))
    times = []
    for i in range(repeats):                                               # a grid click: layer and head together, one redraw
        t = time.perf_counter(); ex.select((ex.layer.value + 3) % L, (ex.head.value + 5) % H); times.append(1000 * (time.perf_counter() - t))
    rows.append(dict(control='grid click', views=list(CONTROL_VIEWS['layer']), median_ms=statistics.median(times), max_ms=max(times),
                     spec_kib=spec_bytes(ex, CONTROL_VIEWS['layer']) / 1024))
    return rows, build_ms


def table(rows, build_ms, N, L, H, T, repeats):
    lines = [f'SinkExplorer latency per control change (Python side: slice + charts + JupyterChart specs), CPU, '
             f'{torch.get_num_threads()} torch threads',
             f'result N={N}, L={L}, H={H}, T={T}; pattern view: first 128 of a {T}x{T} pattern; {repeats} changes per control; '
             f'target <= {TARGET_MS} ms; first build {build_ms:.0f} ms', '',
             f'{"control":<11} {"views redrawn":<28} {"median ms":>9} {"max ms":>7} {"spec KiB":>9}  ok']
    for r in rows:
        lines.append(f'{r["control"]:<11} {",".join(r["views"]):<28} {r["median_ms"]:>9.1f} {r["max_ms"]:>7.1f} {r["spec_kib"]:>9.1f}  '
                     f'{"yes" if r["median_ms"] <= TARGET_MS else "NO"}')
    return '\n'.join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--N', type=int, default=4); p.add_argument('--L', type=int, default=32)
    p.add_argument('--H', type=int, default=32); p.add_argument('--T', type=int, default=1024)
    p.add_argument('--repeats', type=int, default=10)
    p.add_argument('--out', default=str(ROOT / 'bench' / 'results' / 'explorer_latency_cpu.txt'),
                   help='write the command, machine, versions, load and table here')
    p.add_argument('--json', default=None, help='also write the rows as JSON here')
    a = p.parse_args(argv)
    out = Output('explorer_latency.py', argv, packages=PACKAGES)
    rows, build_ms = run(a.N, a.L, a.H, a.T, a.repeats)
    for line in table(rows, build_ms, a.N, a.L, a.H, a.T, a.repeats).splitlines(): out.say(line)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    out.write(a.out)
    if a.json: Path(a.json).write_text(json.dumps(out.record() | dict(rows=rows, build_ms=build_ms), indent=1))
    return 0 if all(r['median_ms'] <= TARGET_MS for r in rows) else 1


if __name__ == '__main__':
    sys.exit(main())
