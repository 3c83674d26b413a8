"""Faults that need real processes: kill -9 while a checkpoint is written, a torn metrics line, a truncated latest
checkpoint, two runs on one folder, a planted pickle. Each case failed (silently or with a crash) before run folders
were made trustworthy; each must now recover exactly or refuse with a clear message."""
import json, os, pickle, signal, subprocess, sys, time
from pathlib import Path

import pytest

from sink_nb.runs import Run
from _cli import sink_nb_cli

JOB = """
import sys, time
from sink_nb.model import SinkConfig
from sink_nb.train import TrainConfig, train
out, resume, delay = sys.argv[1], sys.argv[2] == '1', float(sys.argv[3])
model = SinkConfig.from_name('tiny-cpu', vocab_size=64, block_size=64)
cfg = TrainConfig(steps=30, eval_every=5, checkpoint_every=10, batch_size=8, lr=3e-3, warmup=5, probe_n=8, val_blocks=32,
                  corpus_args=dict(n=600), progress=False, out_dir=out, resume=resume)
train(model, cfg, callbacks=[lambda step, m, loss: time.sleep(delay)])
"""


def curve(run_dir):
    return [(e.step, e.loss, e.val_loss, e.sink) for e in Run(run_dir).metrics()]


@pytest.fixture(scope='module')
def job(tmp_path_factory):
    path = tmp_path_factory.mktemp('job') / 'job.py'
    path.write_text(JOB)
    return path


def run_job(job, out, resume=False, delay=0.0, **kw):
    return subprocess.run([sys.executable, str(job), str(out), '1' if resume else '0', str(delay)], capture_output=True, text=True,
                          timeout=300, **kw)


@pytest.fixture(scope='module')
def reference(job, tmp_path_factory):
    out = tmp_path_factory.mktemp('ref') / 'run'
    assert run_job(job, out).returncode == 0
    return curve(out)


def test_kill_9_during_a_checkpoint_write_then_resume(job, reference, tmp_path):
    out = tmp_path / 'run'
    proc = subprocess.Popen([sys.executable, str(job), str(out), '0', '0.05'])
    deadline = time.time() + 200
    while not (out / 'checkpoints' / 'step-20.tmp').exists():                    # the second checkpoint is being written
        assert proc.poll() is None and time.time() < deadline, 'the job ended before writing step-20'
        time.sleep(0.002)
    os.kill(proc.pid, signal.SIGKILL); proc.wait()
    assert run_job(job, out, resume=True).returncode == 0
    assert curve(out) == reference
    assert not list((out / 'checkpoints').glob('*.tmp'))


def test_a_torn_metrics_line_is_dropped_on_resume(job, reference, tmp_path):
    out = tmp_path / 'run'
    assert run_job(job, out).returncode == 0
    with open(out / Run.METRICS, 'a') as f: f.write('{"step": 31, "loss": 1.2, "val_lo')   # a disk filled mid-append
    res = run_job(job, out, resume=True)
    assert res.returncode == 0, res.stderr
    assert 'torn' in res.stderr
    assert curve(out) == reference


def test_a_truncated_latest_checkpoint_falls_back_to_the_one_before(job, reference, tmp_path):
    out = tmp_path / 'run'
    proc = subprocess.Popen([sys.executable, str(job), str(out), '0', '0.05'])
    deadline = time.time() + 200
    while not (out / 'checkpoints' / 'step-20' / 'state.json').exists():
        assert proc.poll() is None and time.time() < deadline
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL); proc.wait()
    weights = out / 'checkpoints' / 'step-20' / 'model.safetensors'
    weights.write_bytes(weights.read_bytes()[:1000])                               # truncated on disk
    res = run_job(job, out, resume=True)
    assert res.returncode == 0, res.stderr
    assert 'step-20' in res.stderr and 'damaged' in res.stderr                     # it says which checkpoint it skipped
    assert curve(out) == reference                                                 # resumed from step 10, same curve


def test_two_runs_on_one_folder_the_second_is_refused(job, tmp_path):
    out = tmp_path / 'run'
    first = subprocess.Popen([sys.executable, str(job), str(out), '0', '0.2'])
    deadline = time.time() + 100
    while not (out / '.lock').exists():
        assert first.poll() is None and time.time() < deadline
        time.sleep(0.01)
    second = run_job(job, out, resume=True)
    assert second.returncode != 0 and 'in use by another run' in second.stderr, second.stderr
    first.kill(); first.wait()
    third = run_job(job, out, resume=True)                                         # the dead owner's lock is taken over
    assert third.returncode == 0, third.stderr
    steps = [json.loads(l).get('step') for l in (out / Run.METRICS).read_text().splitlines() if 'val_loss' in l]
    assert steps == sorted(set(steps)), steps                                      # no step logged twice


def test_a_planted_pickle_is_never_executed(job, tmp_path):
    out = tmp_path / 'run'
    assert run_job(job, out).returncode == 0
    marker = tmp_path / 'pwned'

    class Exploit:
        def __reduce__(self): return (os.system, (f'touch {marker}',))

    planted = [ckpt / name for ckpt in (out / 'checkpoints').iterdir() for name in ('optimizer.pt', 'rng.pt')]
    for p in planted: p.write_bytes(pickle.dumps(Exploit()))
    res = run_job(job, out, resume=True)                # refused: resuming would prune step folders holding them
    assert res.returncode != 0 and 'optimizer.pt' in res.stderr and not marker.exists(), res.stderr[-1000:]
    for p in planted: p.unlink()
    assert run_job(job, out, resume=True).returncode == 0
    assert not marker.exists()


def test_a_new_run_into_an_existing_run_folder_is_refused(job, tmp_path):
    out = tmp_path / 'run'
    assert run_job(job, out).returncode == 0
    before = (out / Run.METRICS).read_text()
    res = run_job(job, out)
    assert res.returncode != 0 and 'resume=true' in res.stderr and 'overwrite=true' in res.stderr
    assert (out / Run.METRICS).read_text() == before                         # nothing was mixed in


# ---- issue 20: a run's numbers can be published. Each test below failed on d19a708 (see the findings).
RUN = """
import json, sys, time
from sink_nb.model import SinkConfig
from sink_nb.train import TrainConfig, train
out, overrides, delay = sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3])
model = SinkConfig.from_name('tiny-cpu', vocab_size=64, block_size=64)
cfg = TrainConfig(**(dict(steps=30, eval_every=5, checkpoint_every=10, batch_size=8, lr=3e-3, warmup=5, probe_n=8,
                          val_blocks=32, corpus_args=dict(n=600), progress=False, out_dir=out) | overrides))
train(model, cfg, callbacks=[lambda step, m, loss: time.sleep(delay)])
"""


@pytest.fixture(scope='module')
def run_script(tmp_path_factory):
    path = tmp_path_factory.mktemp('run') / 'run.py'
    path.write_text(RUN)
    return path


def start(script, out, delay=0.0, **overrides):
    return subprocess.Popen([sys.executable, str(script), str(out), json.dumps(overrides), str(delay)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(script, out, timeout=120, **overrides):
    proc = start(script, out, **overrides)
    try: stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill(); proc.wait(); pytest.fail(f'{overrides} still ran after {timeout} s')
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def cli(*args, timeout=300, **kw):
    return sink_nb_cli(*args, timeout=timeout, **kw)


def test_resume_to_fewer_steps_than_the_run_has_taken_is_refused(run_script, tmp_path):
    out = tmp_path / 'run'
    assert finish(run_script, out, steps=20).returncode == 0
    res = finish(run_script, out, steps=10, resume=True, allow_changes=['steps'], timeout=90)  # before: trained on, endlessly
    assert res.returncode != 0 and 'at step 20' in res.stderr and '`steps`=10 is behind it' in res.stderr, res.stderr[-2000:]


def independent_sink(out, step):
    "Sink_1 (%) of checkpoint `step` on the run's probe, computed without sink_nb.runs: weights, probe, metric."
    import yaml
    from safetensors.torch import load_file
    from sink_nb.model import SinkConfig, SinkLM, measure_model
    from sink_nb.data import prepare_data
    from sink_nb.train import TrainConfig
    raw = yaml.safe_load((out / 'config.yaml').read_text())
    model_cfg, cfg = SinkConfig(**raw['model']), TrainConfig(**raw['train'])
    model = SinkLM(model_cfg); model.load_state_dict(load_file(str(out / 'checkpoints' / f'step-{step}' / 'model.safetensors')))
    return measure_model(model.eval(), prepare_data(cfg, model_cfg).probe).rate(eps=0.3)


def test_compare_after_a_killed_resume_shows_the_checkpoint_not_a_stale_result(run_script, tmp_path):
    out = tmp_path / 'run'
    assert finish(run_script, out).returncode == 0                                  # complete at 30, result saved
    proc = start(run_script, out, delay=0.1, steps=60, resume=True, allow_changes=['steps'])
    deadline = time.time() + 120
    while not (out / 'checkpoints' / 'step-40' / 'state.json').exists():
        assert proc.poll() is None and time.time() < deadline, proc.communicate()[1][-2000:]
        time.sleep(0.01)
    time.sleep(0.8)                                                                 # an evaluation or two past it
    os.kill(proc.pid, signal.SIGKILL); proc.wait()
    res = cli('compare', out, '--json', tmp_path / 'rows.json')
    assert res.returncode == 0, res.stderr
    row = json.loads((tmp_path / 'rows.json').read_text())['rows'][0]
    assert row['step'] == 40 and row['status'].startswith('interrupted at step 4'), row    # before: steps 45, stale α
    assert row['sink1@0.3'] == pytest.approx(independent_sink(out, 40), abs=0.01), row
    assert 'its numbers are from step 40' in res.stdout


def tree(folder):
    "Every file under `folder` with its bytes: what 'nothing was written or deleted' is checked against."
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(Path(folder).rglob('*')) if p.is_file()}


def test_compare_reads_nothing_a_copied_runs_settings_name(run_script, tmp_path):
    import shutil
    out = tmp_path / 'run'
    assert finish(run_script, out).returncode == 0
    secret = tmp_path / 'private' / 'secret.txt'; secret.parent.mkdir()
    secret.write_text('TOPSECRET line one\n\nTOPSECRET line two\n' * 50); secret.chmod(0o600)
    copy, elsewhere = tmp_path / 'copied', tmp_path / 'elsewhere'
    shutil.copytree(out, copy)
    config = (copy / 'config.yaml').read_text()
    config = config.replace('corpus: bigram-backcopy', f'corpus: {secret}').replace('tokenizer: null', 'tokenizer: bytes')
    config = config.replace("data_dir: ~/.cache/sink_nb/data", f'data_dir: {elsewhere}')
    (copy / 'config.yaml').write_text(config)
    before = tree(copy)
    hook = ('import sys\n'
            f'def audit(event, args):\n    if event == "open" and "{secret.name}" in str(args[0]): sys.stderr.write("OPENED SECRET\\n")\n'
            'sys.addaudithook(audit)\nfrom sink_nb.cli import main\nmain()')
    res = subprocess.run([sys.executable, '-c', hook, 'compare', str(copy)], capture_output=True, text=True, timeout=300)
    assert 'OPENED SECRET' not in res.stderr and not elsewhere.exists()             # before: the secret, tokenised
    assert res.returncode == 1 and 'edited after training' in res.stderr, res.stderr[-2000:]   # and it is refused
    assert tree(copy) == before                                                    # reading a run never writes


def test_overwrite_removes_only_what_sink_nb_wrote(run_script, tmp_path):
    user = tmp_path / 'thesis'; (user / 'data').mkdir(parents=True)
    (user / 'config.yaml').write_text('model: {}\ntrain: {}\n'); (user / 'notes.txt').write_text('three years of notes')
    (user / 'data' / 'x.bin').write_bytes(b'\0' * 10)
    before = tree(user)
    res = finish(run_script, user, overwrite=True)
    assert res.returncode != 0 and 'notes.txt' in res.stderr and 'data' in res.stderr, res.stderr[-1500:]
    assert tree(user) == before                                                    # before: everything deleted

    run = tmp_path / 'run'
    assert finish(run_script, run).returncode == 0
    (run / 'notes.txt').write_text('mine')
    res = finish(run_script, run, overwrite=True)
    assert res.returncode != 0 and 'also holds notes.txt' in res.stderr and (run / 'notes.txt').exists()
    (run / 'notes.txt').unlink()
    assert finish(run_script, run, overwrite=True).returncode == 0                  # a folder holding only a run: replaced

    import shutil
    elsewhere = tmp_path / 'elsewhere'
    shutil.move(run / 'checkpoints', elsewhere); (run / 'checkpoints').symlink_to(elsewhere)
    kept = tree(elsewhere)
    res = finish(run_script, run, overwrite=True)
    assert res.returncode != 0 and 'checkpoints' in res.stderr, res.stderr[-1500:]
    assert tree(elsewhere) == kept and (run / 'config.yaml').exists()               # not even half deleted


def test_prepare_overwrite_refuses_a_folder_it_did_not_write(tmp_path):
    user = tmp_path / 'mine'; user.mkdir(); (user / 'notes.txt').write_text('keep')
    res = cli('prepare', 'sherlock', '--out', user, '--overwrite', '--quiet', '--val-docs', '5')
    assert res.returncode != 0 and 'notes.txt' in res.stderr, res.stderr[-1500:]   # before: deleted, replaced
    assert (user / 'notes.txt').read_text() == 'keep'


def prepared(tmp_path):
    shards = tmp_path / 'shards'
    assert cli('prepare', 'sherlock', '--out', shards, '--val-docs', '10', '--quiet').returncode == 0
    return shards


def train_on(shards, out):
    return cli('train', '--config', 'demo-softmax', f'corpus={shards}', 'tokenizer=bytes', 'vocab_size=258', 'steps=4',
               'eval_every=2', 'probe_n=4', 'batch_size=4', f'out_dir={out}', 'progress=false')


def test_shard_files_outside_the_corpus_and_odd_dtypes_are_refused(tmp_path):
    shards = prepared(tmp_path)
    meta = json.loads((shards / 'meta.json').read_text())
    outside = tmp_path / 'outside.bin'
    outside.write_bytes((65).to_bytes(2, 'little') * 8192)                           # a file a planted meta.json points to
    planted = json.loads(json.dumps(meta))
    planted['parts']['train']['shards'] = [dict(file='../../outside.bin', n_tokens=outside.stat().st_size // 2)]
    planted['parts']['train']['n_tokens'] = outside.stat().st_size // 2
    (shards / 'meta.json').write_text(json.dumps(planted))
    res = train_on(shards, tmp_path / 'r1')
    assert res.returncode != 0 and 'outside.bin' in res.stderr and 'Traceback' not in res.stderr, res.stderr[-1500:]
    (shards / 'meta.json').write_text(json.dumps(meta | dict(dtype='float16')))      # before: every token 0, "trained"
    res = train_on(shards, tmp_path / 'r2')
    assert res.returncode != 0 and 'float16' in res.stderr and 'Traceback' not in res.stderr, res.stderr[-1500:]
