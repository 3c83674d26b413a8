"""What one command-line chart costs: sink_nb's SVG writer (`charts.svg_chart`) versus Altair + vl-convert-python.

    python bench/chart_cost.py --altair-python /tmp/altair-venv/bin/python --repeat 5

The chart is the demo's: two panels (Sink_1 in %, validation loss) of two variants, 13 evaluations each (600 steps,
one every 50). Each measurement is a fresh process, as a `sink-nb` command is: the import of the drawing code, the
first chart drawn to an SVG string (for vl-convert that includes starting its JavaScript engine) and a second one.
`--altair-python` is a Python with altair and vl-convert-python installed (a throwaway venv: they are not sink_nb's
dependencies); the install itself is measured once, by hand, and its command is written in the results file.
"""
import argparse, json, statistics, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def demo_panels() -> list[dict]:
    "The demo chart's data: Sink_1 and validation loss of softmax and sigmoid at steps 0, 50 … 600."
    steps = range(0, 601, 50)
    sink = {'softmax': [min(88.0, 0.2 * s) for s in steps], 'sigmoid': [24.0 * s / 450 if s <= 450 else 14.0
                                                                       for s in steps]}
    loss = {v: [4.3 - 1.5 * s / 600 + d for s in steps] for v, d in (('softmax', 0.0), ('sigmoid', 0.02))}
    return [dict(series={v: list(zip(steps, ys)) for v, ys in sink.items()}, ylabel='Sink_1 (%)', ylim=(0, 100)),
            dict(series={v: list(zip(steps, ys)) for v, ys in loss.items()}, ylabel='validation loss')]


TITLE = 'sink_nb demo, seed 0\nsoftmax: a sink that stays (88 % at step 600)'

SVG_WRITER = '''
import json, sys, time
t0 = time.perf_counter()
from sink_nb.charts import svg_chart
t1 = time.perf_counter()
panels, title = json.loads(sys.argv[1])
for p in panels: p['series'] = {k: [tuple(x) for x in v] for k, v in p['series'].items()}
svg = svg_chart(panels, title=title)
t2 = time.perf_counter()
svg_chart(panels, title=title)
t3 = time.perf_counter()
print(json.dumps(dict(import_s=t1 - t0, first_s=t2 - t1, second_s=t3 - t2, bytes=len(svg))))
'''

ALTAIR = '''
import json, sys, time
t0 = time.perf_counter()
import altair as alt, vl_convert as vlc
t1 = time.perf_counter()
panels, title = json.loads(sys.argv[1])
def chart():
    def panel(p):
        rows = [dict(step=x, value=y, variant=v) for v, pts in p['series'].items() for x, y in pts]
        y = alt.Y('value:Q', title=p['ylabel'], scale=alt.Scale(domain=p['ylim']) if p.get('ylim') else alt.Undefined)
        return alt.Chart(alt.Data(values=rows)).mark_line().encode(x='step:Q', y=y, color='variant:N')
    return alt.hconcat(*map(panel, panels)).properties(title=alt.TitleParams(title.split('\\n'), anchor='middle'))
svg = vlc.vegalite_to_svg(chart().to_json())
t2 = time.perf_counter()
vlc.vegalite_to_svg(chart().to_json())
t3 = time.perf_counter()
print(json.dumps(dict(import_s=t1 - t0, first_s=t2 - t1, second_s=t3 - t2, bytes=len(svg))))
'''


def one(python:str, code:str) -> dict:
    "One fresh process: its own timings, and the wall time of the whole process (interpreter start included)."
    t = time.perf_counter()
    out = subprocess.run([python, '-c', code, json.dumps([demo_panels(), TITLE])], capture_output=True, text=True,
                         check=True, env={'PYTHONPATH': str(ROOT), 'PATH': '/usr/bin:/bin'})
    return json.loads(out.stdout.splitlines()[-1]) | dict(process_s=time.perf_counter() - t)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--altair-python', required=True, help='a Python with altair and vl-convert-python installed')
    p.add_argument('--repeat', type=int, default=5, help='fresh processes per way of drawing (medians are shown)')
    args = p.parse_args()
    ways = {'svg_chart (sink_nb.charts)': (sys.executable, SVG_WRITER),
            'altair + vl-convert': (args.altair_python, ALTAIR)}
    vers = subprocess.run([args.altair_python, '-c', 'import altair, vl_convert; print(altair.__version__, '
                           'vl_convert.__version__)'], capture_output=True, text=True, check=True).stdout.split()
    print(f"the demo chart (2 panels x 2 variants x 13 points) as an SVG string; medians of {args.repeat} fresh "
          f"processes; altair {vers[0]}, vl-convert-python {vers[1]}; Python {sys.version.split()[0]}")
    print(f"{'way':<28}{'import s':>10}{'1st chart s':>13}{'2nd chart s':>13}{'process s':>11}{'SVG bytes':>11}")
    for name, (python, code) in ways.items():
        runs = [one(python, code) for _ in range(args.repeat)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(f"{name:<28}{med['import_s']:>10.4f}{med['first_s']:>13.4f}{med['second_s']:>13.4f}"
              f"{med['process_s']:>11.2f}{med['bytes']:>11,.0f}")


if __name__ == '__main__': main()
