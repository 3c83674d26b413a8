"""What one command-line chart costs: sink_nb's SVG writer (`charts.svg_chart`) versus Altair + vl-convert-python.

    python bench/chart_cost.py --repeat 5 --out bench/results/charts_cpu.txt     # builds a throwaway venv, timed
    python bench/chart_cost.py --altair-python /tmp/altair-venv/bin/python          # a venv you made

The chart is the demo's: two panels (Sink_1 in %, validation loss) of two variants, 13 evaluations each (600 steps,
one every 50). Each measurement is a fresh process, as a `sink-nb` command is: the import of the drawing code, the
first chart drawn to an SVG string (for vl-convert that includes starting its JavaScript engine) and a second one.
Altair and vl-convert-python are not sink_nb's dependencies: without `--altair-python` (a Python that has them) the
script installs them into a throwaway venv and reports that install's wall time and what it adds to the venv, by
package. The results file opens with the command, the machine, the versions and the load before and after.
"""
import argparse, json, statistics, subprocess, sys, tempfile, time
from pathlib import Path

from bench_env import Output

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


def folder_mib(path:Path) -> float:
    return sum(f.stat().st_size for f in path.rglob('*') if f.is_file() and not f.is_symlink()) / 2 ** 20


def install_altair(venv:Path, out:Output) -> str:
    "A fresh venv with altair and vl-convert-python; says the install's wall time and the MiB it adds, by package."
    subprocess.run([sys.executable, '-m', 'venv', str(venv)], check=True)
    python = venv / 'bin' / 'python'
    site = Path(subprocess.check_output([str(python), '-c', 'import sysconfig; print(sysconfig.get_path("purelib"))'],
                                        text=True).strip())
    before = {p.name: folder_mib(p) for p in site.iterdir() if p.is_dir()}
    t0 = time.perf_counter()
    subprocess.run([str(python), '-m', 'pip', 'install', '-q', '--no-cache-dir', 'altair', 'vl-convert-python'],
                   check=True)
    seconds = time.perf_counter() - t0
    added = {p.name: folder_mib(p) for p in site.iterdir() if p.is_dir() and p.name not in before
             and not p.name.endswith('-info')}
    largest = ', '.join(f'{name} {mib:.0f}' for name, mib in sorted(added.items(), key=lambda kv: -kv[1])[:4])
    out.say(f"install: python -m venv + pip install --no-cache-dir altair vl-convert-python took {seconds:.1f} s wall "
            f"(the package registry as this machine reaches it) and added {sum(added.values()):.0f} MiB to the venv "
            f"in {len(added)} packages; largest (MiB): {largest}")
    return str(python)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--altair-python', help='a Python with altair and vl-convert-python installed (default: install '
                   'them into a throwaway venv and time that)')
    p.add_argument('--repeat', type=int, default=5, help='fresh processes per way of drawing (medians are shown)')
    p.add_argument('--out', help='write the command, machine, load and table to this text file')
    args = p.parse_args(argv)
    if args.repeat < 1: p.error(f"--repeat must be at least 1, got {args.repeat}")
    out = Output('chart_cost.py', argv)
    with tempfile.TemporaryDirectory() as tmp:
        altair_python = args.altair_python or install_altair(Path(tmp) / 'altair-venv', out)
        measure(altair_python, args.repeat, out)
    out.say("'import s' and the chart times are measured inside each process; 'process s' is the whole process as a "
            "command pays it (interpreter start included); vl-convert's 1st chart includes starting its JavaScript engine")
    out.write(args.out)


def measure(altair_python:str, repeat:int, out:Output):
    "Medians over `repeat` fresh processes of each way of drawing the demo chart."
    ways = {'svg_chart (sink_nb.charts)': (sys.executable, SVG_WRITER), 'altair + vl-convert': (altair_python, ALTAIR)}
    vers = subprocess.run([altair_python, '-c', 'import altair, vl_convert; print(altair.__version__, '
                           'vl_convert.__version__)'], capture_output=True, text=True, check=True).stdout.split()
    out.say(f"the demo chart (2 panels x 2 variants x 13 points) as an SVG string; medians of {repeat} fresh "
            f"processes; altair {vers[0]}, vl-convert-python {vers[1]}")
    out.say(f"{'way':<28}{'import s':>10}{'1st chart s':>13}{'2nd chart s':>13}{'process s':>11}{'SVG bytes':>11}")
    for name, (python, code) in ways.items():
        runs = [one(python, code) for _ in range(repeat)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        out.say(f"{name:<28}{med['import_s']:>10.4f}{med['first_s']:>13.4f}{med['second_s']:>13.4f}"
                f"{med['process_s']:>11.2f}{med['bytes']:>11,.0f}")


if __name__ == '__main__': main()
