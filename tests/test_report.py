"""`sink-nb report` as a user runs it on a sink_nb run folder. On SmolLM2's GGUF file (offline): tests/test_hf_smollm2.py,
which compares it with the model that file loads once for all its tests."""
import json, os, re, subprocess, sys
from pathlib import Path

import pytest
import torch

from sink_nb.runs import Run
from _cli import sink_nb_cli



def run(*args, timeout=600):
    return sink_nb_cli(*args, timeout=timeout, env={'HF_HUB_OFFLINE': '1'})


def page_checks(out:Path, data:dict) -> str:
    "The page beside the JSON: one SVG per chart, no script, nothing fetched, every chart naming model and data."
    page = (out / 'report.html').read_text()
    svgs = re.findall(r'<svg.*?</svg>', page, re.S)
    charts = 4 + (data['heads']['labels'] is not None) + (data.get('slot') is not None)   # + taxonomy, + key slot
    assert len(svgs) == charts and page.count('<svg') == charts, (len(svgs), charts)
    assert '<script' not in page.lower() and not re.search(r'(src|href)="(https?:)?//', page)
    name, what = data['measured']['model'], data['measured']['data']
    assert all(name in s and what in s for s in svgs)
    return page


@pytest.fixture(scope='module')
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp('report') / 'demo'
    done = run('train', '--config', 'demo-softmax', 'steps=8', 'checkpoint_every=8', 'eval_every=8', 'probe_n=6',
               'progress=false', f'out_dir={out}')
    assert done.returncode == 0, done.stderr
    return Run(out)


def test_report_on_a_run_folder_is_its_final_checkpoint_on_its_own_probe(tiny_run, tmp_path):
    out = tmp_path / 'rep'
    done = run('report', tiny_run.path, '--out', out, '--quiet')
    assert done.returncode == 0, done.stderr
    data = json.loads((out / 'report.json').read_text())
    own = tiny_run.result()                                             # the run's own result at its final step
    m = data['measured']
    assert (m['source'], m['step'], m['T'], m['N']) == ('run', 8, own.T, own.N)
    assert data['sink1'] == pytest.approx(own.rate(), abs=1e-4)
    torch.testing.assert_close(torch.tensor(data['alpha1']), own.alpha[..., own.n_slots].mean(0), atol=1e-5, rtol=0)
    page = page_checks(out, data)
    assert page.count(f"{tiny_run.path.name} at step 8 ·") >= 5           # every chart and the summary name the step
    again = run('report', tiny_run.path, '--out', out, '--quiet')        # a report over a report: replaced
    assert again.returncode == 0, again.stderr


def test_report_refusals_say_what_is_wrong_and_write_nothing(tiny_run, tmp_path):
    (tmp_path / 'texts.txt').write_text('Some text.\n\nMore text.')
    (tmp_path / 'mine').mkdir(); (tmp_path / 'mine' / 'notes.txt').write_text('mine')
    for args, said in ((['--texts', tmp_path / 'texts.txt'], 'a run is measured on its own held-out probe'),
                       (['--T', '16'], 'a run is measured on its own probe, of T = '),
                       (['--out', tmp_path / 'mine'], 'holds files a report did not write'),
                       (['--out', tiny_run.path / 'rep'], 'is inside'),
                       (['--device', 'cuda:99'], '`device')):
        done = run('report', tiny_run.path, '--quiet', *args)
        assert done.returncode == 1 and done.stderr.startswith('sink-nb report: ') and said in done.stderr, done.stderr
        assert 'Traceback' not in done.stderr
    assert sorted(p.name for p in (tmp_path / 'mine').iterdir()) == ['notes.txt']
    assert not (tiny_run.path / 'rep').exists()
    done = run('report', tmp_path / 'no-such-model', '--quiet')
    assert done.returncode == 1 and done.stderr.startswith('sink-nb report: '), done.stderr
    assert run('report', tiny_run.path, '--eps', '2').returncode == 2     # argparse: the allowed range said


REFUSE_LIGHTLY = """
import sys
from sink_nb.cli import main
for argv, said in REFUSALS:
    try: main(argv)
    except SystemExit as e: assert said in str(e), (argv, str(e))
    else: raise AssertionError(f'{argv} was not refused')
heavy = sorted({'transformers', 'altair'} & set(sys.modules))
assert not heavy, f'a refusal imported {heavy}: seconds a user waits for it'
"""


def test_argument_and_folder_refusals_import_neither_transformers_nor_altair(tiny_run, tmp_path):
    "Refusals whose checks need neither come before they are imported: not a timing test, what was imported."
    (tmp_path / 'mine').mkdir(); (tmp_path / 'mine' / 'notes.txt').write_text('mine')
    missing = str(tmp_path / 'no-such-model')
    refusals = [(['report', str(tiny_run.path), '--T', '16', '--quiet'], 'a run is measured on its own probe'),
                (['report', str(tiny_run.path), '--out', str(tmp_path / 'mine'), '--quiet'], 'did not write'),
                (['report', str(tiny_run.path), '--device', 'cuda:99', '--quiet'], '`device'),
                (['measure', missing, '--device', 'cuda:99'], 'sink-nb measure: ValueError: `device'),
                (['measure', missing, '--T', '2'], 'sink-nb measure: ValueError: `T` = 2 is too short'),
                (['heads', missing, '--device', 'cuda:99'], 'sink-nb heads: ValueError: `device'),
                (['quantize', missing, '--device', 'cuda:99'], 'sink-nb quantize: `device'),
                (['stream', missing, '--T', '16', '--window', '4', '--sinks', '12'], 'the sinks policy is dense'),
                (['trajectory', str(tiny_run.path), '--threshold', 'bogus=1'], 'names no statistic')]
    done = subprocess.run([sys.executable, '-c', f'REFUSALS = {refusals!r}\n' + REFUSE_LIGHTLY], capture_output=True,
                          text=True, timeout=300, env=os.environ | {'HF_HUB_OFFLINE': '1'})
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(p.name for p in (tmp_path / 'mine').iterdir()) == ['notes.txt']


REPORT_AND_SAY_WHAT_LOADED = """
import sys
from sink_nb.cli import main
main(sys.argv[1:])
print(sorted(m for m in ('sink_nb.hf', 'sink_nb.hf_load') if m in sys.modules))
"""


def test_keep_path_keeps_the_models_path_in_the_json(tiny_run, tmp_path):
    "A run's report (int8 cost included) also loads none of the transformers-model code: seconds of imports a call."
    done = subprocess.run([sys.executable, '-c', REPORT_AND_SAY_WHAT_LOADED, 'report', str(tiny_run.path), '--out',
                           str(tmp_path / 'rep'), '--quiet', '--keep-path'], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == '[]', done.stdout[-500:]
    assert json.loads((tmp_path / 'rep' / 'report.json').read_text())['measured']['path'] == str(tiny_run.path)
    assert str(tiny_run.path) not in (tmp_path / 'rep' / 'report.html').read_text()


def test_an_out_that_cannot_be_written_is_refused_before_measuring(tiny_run, tmp_path):
    (tmp_path / 'dirjson' / 'report.json').mkdir(parents=True)
    for out, said in ((tmp_path / 'dirjson', 'which is not a file'), ('/proc/sink-report', 'cannot be written')):
        done = run('report', tiny_run.path, '--out', out, '--quiet')
        assert done.returncode == 1 and said in done.stderr and 'Traceback' not in done.stderr, done.stderr
