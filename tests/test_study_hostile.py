"""A hostile user against `sink-nb demo | study | mitigations` (issue 37): an --out that is a run or inside one, a file
where a folder goes, a Ctrl-C while a study re-runs into its old folder, a variant that diverges, a disk that fills up.
Each case failed on 5f6afdd — a run overwritten, a stale report, a lock left behind, a traceback — and must now be refused
with one line before any training, or end with its files saying what happened."""
import dataclasses, errno, os, signal, subprocess, sys, time
from pathlib import Path

import pytest

from sink_nb import cli, studies
from sink_nb.runs import Run
from sink_nb.studies import Study
from _cli import sink_nb_cli

SINK_NB = Path(sys.executable).parent / 'sink-nb'
STUDY = ('study', 'optimization', '--only', 'lr=0.003', 'lr=0.03', '--seeds', '1')


def sink_nb(*args, timeout=300):
    return sink_nb_cli(*args, timeout=timeout)


def one_line_refusal(res, says:str):
    "Refused with status 1 and one line naming the problem, never a traceback."
    assert res.returncode == 1, (res.returncode, res.stdout[-1000:], res.stderr[-2000:])
    assert 'Traceback' not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr[-2000:]
    assert says in res.stderr, res.stderr


def listing(folder:Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None for p in sorted(folder.rglob('*'))}


@pytest.fixture(scope='module')
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp('run') / 'r'
    res = sink_nb('train', '--config', 'demo-softmax', 'steps=2', f'out_dir={out}', 'progress=false',
                  'corpus_args={n: 1536}')
    assert res.returncode == 0, res.stderr[-2000:]
    return out


@pytest.mark.parametrize('args, where', [
    (['demo', '--jobs', '1', '--steps', '50', '--quiet'], ''),
    (['demo', '--jobs', '1', '--steps', '50', '--quiet'], 'sub'),
    ([*STUDY, '--steps', '50', '--jobs', '1'], 'sub'),
    (['mitigations', '--only', 'softmax', '--seeds', '1', '--steps', '50', '--jobs', '1'], 'sub'),
])
def test_a_run_folder_or_a_folder_inside_one_is_refused_as_out(run_dir, args, where):
    "Before: the demo replaced the run's summary.json and added its own folders; the others made a folder in the run."
    before = listing(run_dir)
    res = sink_nb(*args, '--out', run_dir / where if where else run_dir)
    one_line_refusal(res, f"is {'inside the' if where else 'the'} run folder {run_dir}")
    assert listing(run_dir) == before and Run(run_dir).status == 'complete at step 2'


def test_demo_refuses_a_file_as_out_and_a_foreign_file_in_its_run_folder(tmp_path):
    "Before: a FileExistsError traceback, after the first variant had started training."
    (tmp_path / 'file').write_text('mine')
    one_line_refusal(sink_nb('demo', '--out', tmp_path / 'file', '--steps', '50', '--jobs', '1'), 'is a file')
    (tmp_path / 'demo' / 'softmax').mkdir(parents=True); (tmp_path / 'demo' / 'softmax' / 'notes.txt').write_text('mine')
    res = sink_nb('demo', '--out', tmp_path / 'demo', '--steps', '50', '--jobs', '1')
    one_line_refusal(res, 'which is not a run or report of `sink-nb demo`')
    assert listing(tmp_path / 'demo') == {'softmax': None, 'softmax/notes.txt': b'mine'}


@pytest.fixture(scope='module')
def old_study(tmp_path_factory):
    "A finished study of two variants, 150 steps; each test re-runs it into a copy."
    out = tmp_path_factory.mktemp('study') / 'out'
    res = sink_nb(*STUDY, '--steps', '150', '--jobs', '2', '--out', out)       # as the re-run: it replaces its seeds
    assert res.returncode == 0 and (out / 'study.json').exists(), res.stderr[-2000:]
    return out


@pytest.mark.parametrize('jobs, to', [(2, 'group'), (2, 'parent'), (1, 'group')])
def test_a_study_interrupted_while_it_re_runs_leaves_no_stale_report_and_no_lock(old_study, tmp_path, jobs, to):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it, or to the parent only) while the runs are training.
    Before: the old study.json/study.txt stayed beside replaced runs, each run kept a .lock (jobs 2), a traceback."""
    import shutil
    out = tmp_path / 'out'; shutil.copytree(old_study, out)
    proc = subprocess.Popen([str(SINK_NB), *STUDY, '--steps', '150', '--jobs', str(jobs), '--out', str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    t0 = time.time()
    def training(run:Path) -> bool:                                 # the new run's first evaluation is logged
        try: return (run / '.lock').exists() and (run / 'metrics.jsonl').stat().st_mtime > t0
        except FileNotFoundError: return False
    while not any(training(out / v / 'seed0') for v in ('lr-0.003', 'lr-0.03')):
        assert proc.poll() is None and time.time() - t0 < 180, proc.communicate()
        time.sleep(0.2)
    time.sleep(1)
    os.killpg(proc.pid, signal.SIGINT) if to == 'group' else proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, stderr[-3000:])
    assert stderr.strip() == 'sink-nb study: interrupted', stderr[-3000:]
    assert not (out / 'study.json').exists() and not (out / 'study.txt').exists()      # no report of replaced runs
    assert not list(out.rglob('.lock')) and not list(out.glob('.*tmp*')), sorted(out.rglob('.*'))
    statuses = [Run(p).status for p in sorted(out.glob('*/seed0'))]
    assert any(s.startswith('interrupted') for s in statuses), statuses


@pytest.fixture
def late_study(monkeypatch):
    "A study registered late (CPU_STUDIES is open): a variant that diverges at once beside one that trains."
    monkeypatch.setitem(studies.CPU_STUDIES, 'probe-diverge',
                        {'demo': {}, 'diverges': dict(lr=1e4, min_lr=0.0, grad_clip=0.0)})
    import torch; torch.set_num_threads(1)
    return 'probe-diverge'


def test_a_diverging_variant_is_recorded_and_the_others_summarised(late_study, tmp_path, capsys):
    "Before: the whole study stopped at the divergence with no study.json; the finished variant was lost."
    out = tmp_path / 'out'
    with pytest.raises(SystemExit) as stop:
        cli.main(['study', late_study, '--seeds', '1', '--steps', '50', '--jobs', '1', '--out', str(out)])
    assert '1 of 2 runs did not finish (diverges seed 0: stopped at step' in str(stop.value), stop.value
    study = Study.load(out / 'study.json')
    assert study.seeds('demo') == [0] and [f[:2] for f in study.failures()] == [('diverges', 0)]
    assert study.meta['failed'][0].startswith('diverges seed 0: stopped at step')
    text = (out / 'study.txt').read_text()
    assert 'did not finish' in text and '# did not finish: diverges seed 0: stopped at step' in text, text
    assert 'did not finish' in capsys.readouterr().out                               # the table printed says it too


def test_study_json_that_is_not_a_study_is_refused_and_a_full_disk_is_one_line(late_study, tmp_path, monkeypatch):
    "Before: a foreign study.json was overwritten after all the training; a full disk gave a traceback."
    out = tmp_path / 'out'; out.mkdir(); (out / 'study.json').write_text('{"mine": 1}')
    argv = ['study', late_study, '--only', 'demo', '--seeds', '1', '--steps', '50', '--jobs', '1', '--out', str(out)]
    with pytest.raises(SystemExit, match='study.json is not a study saved by sink_nb'): cli.main(argv)
    assert (out / 'study.json').read_text() == '{"mine": 1}' and list(out.iterdir()) == [out / 'study.json']
    (out / 'study.json').unlink()
    def full(self, path): raise OSError(errno.ENOSPC, f'cannot write {path} (No space left on device)')
    monkeypatch.setattr(Study, 'save', full)
    with pytest.raises(SystemExit, match=r'^sink-nb study: .*No space left on device'): cli.main(argv)
    assert not (out / 'study.json').exists() and not (out / 'study.txt').exists()
    assert Run(out / 'demo' / 'seed0').status == 'complete at step 50'            # the runs are kept


ONE = ('study', 'optimization', '--only', 'lr=0.01 (demo)', '--steps', '50', '--jobs', '1')


def test_a_second_study_adds_its_seeds_to_the_record_and_another_request_is_refused(tmp_path, capsys):
    """Issue 58 high 1 and 2. Before: the second request's study.json listed seed 100 only, beside seeds 0 and 1 on
    disk, and said "its runs are replaced now"; another --setting retrained seed0 as a 2-layer run in the same folder."""
    import torch; torch.set_num_threads(1)
    out = tmp_path / 'S1'
    cli.main([*ONE, '--seeds', '2', '--out', str(out)])
    capsys.readouterr()
    cli.main([*ONE, '--seeds', '1', '--first-seed', '100', '--out', str(out)])
    said = capsys.readouterr().out
    assert 'replaced' not in said and f'adding seed 100 to the study in {out}, which holds seeds 0, 1' in said, said
    study = Study.load(out / 'study.json')
    assert study.seeds('lr=0.01 (demo)') == [0, 1, 100] and study.meta['seeds'] == [0, 1, 100], study.meta
    assert len(study.meta['commands']) == 2 and '--first-seed 100' in study.command
    before = listing(out)
    for extra, says in ((['--steps', '60'], 'train.steps 50 there, 60 here'),
                        (['--setting', '2 layers x 4 heads'], "holds study 'optimization' in setting 'demo', not")):
        with pytest.raises(SystemExit, match='^sink-nb study: ') as stop: cli.main([*ONE, *extra, '--out', str(out)])
        assert says in str(stop.value) and 'give another out folder' in str(stop.value), stop.value
    (out / 'study.json').unlink()
    with pytest.raises(SystemExit, match=r'model.n_layer 1 there, 2 here'):        # the runs say it without a record
        cli.main([*ONE, '--setting', '2 layers x 4 heads', '--out', str(out)])
    assert listing(out) == {k: v for k, v in before.items() if k != 'study.json'}


def test_the_default_out_of_a_study_names_its_setting(tmp_path, monkeypatch):
    "Before: runs/study-NAME whatever the setting, so a second setting replaced the first's runs."
    import torch; torch.set_num_threads(1)
    monkeypatch.chdir(tmp_path)
    cli.main(['study', 'optimization', '--only', 'lr=0.03', '--seeds', '1', '--steps', '50', '--jobs', '1',
              '--setting', '2 layers x 4 heads'])
    assert Study.load(tmp_path / 'runs' / 'study-optimization-2-layers-x-4-heads' / 'study.json').meta['setting'] == \
        '2 layers x 4 heads'
    assert [p.name for p in (tmp_path / 'runs').iterdir()] == ['study-optimization-2-layers-x-4-heads']


from sink_nb.attention import ATTENTION_OPS
LATE_OP = dataclasses.replace(ATTENTION_OPS['softmax'], name='zz-late-op')   # top level: a training process loads it


def test_a_late_op_in_a_late_study_reaches_the_training_processes(monkeypatch, tmp_path, capfd):
    "Issue 58 medium 10. Before: with --jobs 2 the training processes lacked the op (an atexit traceback); jobs 1 worked."
    monkeypatch.setitem(ATTENTION_OPS, 'zz-late-op', LATE_OP)
    monkeypatch.setitem(studies.CPU_STUDIES, 'zz-late-ops', {'late op': dict(attention='zz-late-op'), 'softmax': {}})
    out = tmp_path / 'out'
    cli.main(['study', 'zz-late-ops', '--seeds', '1', '--steps', '50', '--jobs', '2', '--out', str(out)])
    assert Run(out / 'late-op' / 'seed0').config.model.attention == 'zz-late-op'
    assert Study.load(out / 'study.json').seeds('late op') == [0]
    assert 'Traceback' not in capfd.readouterr().err


def test_a_late_entry_that_cannot_reach_the_training_processes_is_refused_before_training(monkeypatch, tmp_path):
    "An op whose formula is a lambda cannot be pickled: refused in one line before any process starts."
    op = dataclasses.replace(ATTENTION_OPS['softmax'], name='zz-lambda-op', formula=lambda s: s.exp())
    monkeypatch.setitem(ATTENTION_OPS, 'zz-lambda-op', op)
    monkeypatch.setitem(studies.CPU_STUDIES, 'zz-lambda', {'lambda op': dict(attention='zz-lambda-op')})
    out = tmp_path / 'out'
    with pytest.raises(SystemExit, match=r"ATTENTION_OPS\['zz-lambda-op'\] .*cannot be pickled.*jobs 1"):
        cli.main(['study', 'zz-lambda', '--seeds', '1', '--steps', '50', '--jobs', '2', '--out', str(out)])
    assert not list(out.rglob('metrics.jsonl'))


def test_a_late_op_a_training_process_cannot_load_is_one_line_without_a_traceback(tmp_path):
    """An op defined in `python -c` pickles here but cannot be loaded in a spawned process. Before: a KeyError and the
    workers' "Exception ignored ... SystemExit: 130" traceback at exit."""
    script = ("import dataclasses, sys\nfrom sink_nb.attention import ATTENTION_OPS\nfrom sink_nb import studies, cli\n"
              "def f(s): return s.exp()\n"
              "ATTENTION_OPS['zz-main-op'] = dataclasses.replace(ATTENTION_OPS['softmax'], name='zz-main-op', formula=f)\n"
              "studies.CPU_STUDIES['zz-main'] = {'a': dict(attention='zz-main-op'), 'b': {}}\n"
              "sys.exit(cli.main(['study', 'zz-main', '--seeds', '1', '--steps', '50', '--jobs', '2', '--out', "
              "sys.argv[1]]))\n")
    res = subprocess.run([sys.executable, '-c', script, str(tmp_path / 'out')], capture_output=True, text=True,
                         timeout=300)
    one_line_refusal(res, "ATTENTION_OPS['zz-main-op'] (AttributeError: Can't get attribute 'f'")
    assert 'did not reach a training process' in res.stderr and not list(tmp_path.rglob('metrics.jsonl'))


@pytest.fixture
def warm_study():
    "A late study whose variant sets a warmup of 200 steps, under a name no one else registers."
    name = 'zz-warm-of-this-test'
    studies.CPU_STUDIES[name] = {'demo': {}, 'warm 200': dict(warmup=200)}
    try:
        yield name
    finally:
        del studies.CPU_STUDIES[name]


def test_a_warmup_longer_than_the_steps_is_refused_before_training(warm_study, tmp_path):
    "Before: `--steps 50` with a variant's warmup=200 trained 50 steps that never left the warmup, silently."
    out = tmp_path / 'out'
    with pytest.raises(SystemExit, match="sink-nb study: .*variant 'warm 200': it sets warmup = 200, yet its runs train "
                                         "for 50 steps: the learning rate would never leave its warmup"):
        cli.main(['study', warm_study, '--seeds', '1', '--steps', '50', '--jobs', '1', '--out', str(out)])
    assert not out.exists()                                                     # refused before any folder
    with pytest.raises(ValueError, match=r"CPU_STUDIES\['zz-warm'\] variant 'w': it sets warmup = 900, yet its runs "
                                         "train for 600 steps"):
        studies.CPU_STUDIES['zz-warm'] = {'w': dict(warmup=900)}                # longer than its own config's steps
    assert 'zz-warm' not in studies.CPU_STUDIES
