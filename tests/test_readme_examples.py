"The README's three examples run as written, after the README's first command (the demo), in a fresh folder."
import json, os, re, subprocess, sys
from pathlib import Path

import pytest

from sink_nb.runs import Run

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent                       # the venv the tests run in stands for the README's .venv


README_TEXT = ROOT.joinpath('README.md').read_text()


def examples() -> tuple[list[str], str]:
    "The shell lines and the Python block of the README's 'Three examples' section."
    section = ROOT.joinpath('README.md').read_text().split('## Three examples', 1)[1].split('\n## ', 1)[0]
    shell = re.search(r'```sh\n(.*?)```', section, re.S).group(1)
    lines = [l for l in shell.splitlines() if l.strip() and not l.lstrip().startswith('#')]
    return lines, re.search(r'```python\n(.*?)```', section, re.S).group(1)


def run(command:str, cwd:Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f'{BIN}{os.pathsep}{os.environ["PATH"]}')
    return subprocess.run(command.replace('.venv/bin/', f'{BIN}/'), shell=True, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


def demo_says_what_the_readme_shows(stdout:str, out:Path):
    "The default demo (600 steps, seed 0): its summary, its runs, its chart, and the README's copy of its table."
    summary = json.loads((out / 'summary.json').read_text())
    soft, sig = summary['softmax'], summary['sigmoid']
    assert soft['sink_rate_curve'][0][1] == 0 and soft['sink_rate'] > 50, soft       # the sink emerges and stays
    assert soft['peak'] == max(v for _, v in soft['sink_rate_curve']) >= soft['sink_rate']
    assert sig['sink_rate'] < soft['sink_rate'] - 30, (sig, soft)                    # far weaker at the end in sigmoid
    assert abs(soft['val_loss'] - sig['val_loss']) < 0.05                              # same task, same loss
    for variant in summary:
        folder = Run(out / variant)                                                    # the final result: fresh, same Sink_1
        assert folder.status == 'complete at step 600', folder.status
        assert folder.result().rate() == pytest.approx(summary[variant]['sink_rate'], abs=1e-3)
    svg = (out / 'sink_rate.svg').read_text()
    assert svg.count('<polyline') == 4 and 'validation loss' in svg                   # Sink_1 and loss, both variants
    said = [l for l in stdout.splitlines() if l.startswith(('softmax: ', 'sigmoid: '))]
    assert len(said) == 2 and all(l in svg for l in said), said                       # printed and drawn, the same words
    for twin, line in zip(('softmax', 'sigmoid'), said):                               # the README shows this run
        shown = next(l for l in README_TEXT.splitlines() if l.startswith(f'{twin}: '))
        assert line.split(' (')[0] == shown.split(' (')[0], (line, shown)              # stays / transient / none
        table = next(l for l in stdout.splitlines() if l.split()[:1] == [twin]).split()
        row = next(l for l in README_TEXT.splitlines() if l.split()[:1] == [twin] and len(l.split()) == 9).split()
        assert abs(float(table[3]) - float(row[3])) <= 5 and abs(float(table[4]) - float(row[4])) <= 5, (table, row)


def test_the_three_examples_run_as_written(tmp_path):
    lines, python = examples()
    assert len(lines) == 2 and 'sink-nb report' in lines[0] and 'sink-nb train' in lines[1], lines
    demo = run('.venv/bin/sink-nb demo --quiet', tmp_path)                # the README's first command, its last part
    assert demo.returncode == 0, demo.stderr[-2000:]
    shown = ROOT / 'nbs' / 'images' / 'demo_sink_rate.svg'                # the README's chart is this run's, byte for byte
    assert (tmp_path / 'runs' / 'demo' / 'sink_rate.svg').read_bytes() == shown.read_bytes(), \
        f'the demo drew another chart than {shown}: copy runs/demo/sink_rate.svg there and check the README numbers'
    assert '![' in README_TEXT and '](nbs/images/demo_sink_rate.svg)' in README_TEXT
    demo_says_what_the_readme_shows(demo.stdout, tmp_path / 'runs' / 'demo')
    for line in lines:
        out = run(line, tmp_path)
        assert out.returncode == 0, (line, out.stderr[-2000:])
    report = tmp_path / 'runs' / 'report-softmax'
    assert (report / 'report.html').read_text().count('<svg') >= 3
    costs = json.loads((report / 'report.json').read_text())
    assert costs['quantisation']['rows'][1]['ratio'] > 0 and costs['eviction']['policies'], costs.keys()
    assert (tmp_path / 'runs' / 'sigmoid-knob' / 'config.yaml').is_file()
    out = subprocess.run([sys.executable, '-c', python + '\nprint("shown")'],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and 'shown' in out.stdout, out.stderr[-2000:]
