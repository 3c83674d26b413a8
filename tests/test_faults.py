"""Faults that need real processes: kill -9 while a checkpoint is written, a torn metrics line, a truncated latest
checkpoint, two runs on one folder, a planted pickle. Each case failed (silently or with a crash) before run folders
were made trustworthy; each must now recover exactly or refuse with a clear message."""
import json, os, pickle, signal, subprocess, sys, time

import pytest

from sink_nb.runs import Run

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

    for ckpt in (out / 'checkpoints').iterdir():
        for name in ('optimizer.pt', 'rng.pt'): (ckpt / name).write_bytes(pickle.dumps(Exploit()))
    assert run_job(job, out, resume=True).returncode == 0
    assert not marker.exists()


def test_a_new_run_into_an_existing_run_folder_is_refused(job, tmp_path):
    out = tmp_path / 'run'
    assert run_job(job, out).returncode == 0
    before = (out / Run.METRICS).read_text()
    res = run_job(job, out)
    assert res.returncode != 0 and 'resume=true' in res.stderr and 'overwrite=true' in res.stderr
    assert (out / Run.METRICS).read_text() == before                         # nothing was mixed in
