"""Training as processes: kill -9 and resume gives the uninterrupted losses; a 2-process torchrun (gloo, CPU) trains
and matches one process at equal global batch; every shipped experiment config loads and builds."""
import os, signal, subprocess, sys, time

import pytest
import torch

from sink_nb.model import SinkLM
from sink_nb.runs import Run
from sink_nb.run_configs import list_configs, load_run_config

JOB = """
import sys, time
from sink_nb.model import SinkConfig
from sink_nb.train import TrainConfig, train
out, resume, delay, parallel = sys.argv[1], sys.argv[2] == '1', float(sys.argv[3]), sys.argv[4]
model = SinkConfig.from_name('tiny-cpu', vocab_size=64, block_size=64)
cfg = TrainConfig(steps=40, eval_every=5, checkpoint_every=10, batch_size=8, lr=3e-3, warmup=5, probe_n=8, val_blocks=32,
                  corpus_args=dict(n=800), progress=False, out_dir=out, resume=resume, parallel=parallel)
train(model, cfg, callbacks=[lambda step, m, loss: time.sleep(delay)])
"""


def metrics(run_dir):
    "The evaluation records of a run, as dicts (events such as 'resumed' are logged too, and skipped here)."
    return [e._asdict() for e in Run(run_dir).metrics()]


@pytest.fixture(scope='module')
def job(tmp_path_factory):
    path = tmp_path_factory.mktemp('job') / 'job.py'
    path.write_text(JOB)
    return path


@pytest.fixture(scope='module')
def uninterrupted(job, tmp_path_factory):
    out = tmp_path_factory.mktemp('full') / 'run'
    subprocess.run([sys.executable, job, out, '0', '0', 'ddp'], check=True, timeout=300)
    return metrics(out)


def test_kill_9_then_resume_gives_the_same_losses(job, uninterrupted, tmp_path):
    out = tmp_path / 'run'
    proc = subprocess.Popen([sys.executable, job, out, '0', '0.15', 'ddp'])
    deadline = time.time() + 240
    while not (out / 'checkpoints' / 'step-20').exists():             # let it pass two checkpoints, then kill it mid-run
        assert proc.poll() is None and time.time() < deadline, 'the job ended before its step-20 checkpoint'
        time.sleep(0.05)
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGKILL); proc.wait()
    assert proc.returncode == -signal.SIGKILL
    killed_at = max(m['step'] for m in metrics(out))
    assert 20 <= killed_at < 40, killed_at
    subprocess.run([sys.executable, job, out, '1', '0', 'ddp'], check=True, timeout=300)
    resumed = metrics(out)
    assert [m['step'] for m in resumed] == [m['step'] for m in uninterrupted]
    for a, b in zip(resumed, uninterrupted):
        assert a['loss'] == b['loss'] and a['val_loss'] == b['val_loss'] and a['sink'] == b['sink'], (a, b)


@pytest.mark.parametrize('parallel', ['ddp', 'fsdp'])
def test_torchrun_two_processes_match_one(job, uninterrupted, tmp_path, parallel):
    out = tmp_path / 'run'
    env = os.environ | {'OMP_NUM_THREADS': '1'}
    res = subprocess.run([sys.executable, '-m', 'torch.distributed.run', '--nproc_per_node', '2', '--master_port', str(29500 + os.getpid() % 500),
                          job, out, '0', '0', parallel], capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    two = metrics(out)
    assert [m['step'] for m in two] == [m['step'] for m in uninterrupted]
    for a, b in zip(two, uninterrupted):
        if b['loss'] is not None: assert a['loss'] == pytest.approx(b['loss'], rel=1e-4), (a, b)
        assert a['val_loss'] == pytest.approx(b['val_loss'], rel=1e-4), (a, b)


@pytest.mark.parametrize('name', list_configs())
def test_every_shipped_config_loads_and_builds(name):
    model_cfg, train_cfg, paper = load_run_config(name)
    assert paper['description'], name
    with torch.device('meta'): model = SinkLM(model_cfg)
    assert model.num_params() > 0
    assert train_cfg.steps >= 1 and 'sink_rate' in paper or 'sink_star' in paper


def test_a_run_says_how_it_computes_and_how_long_it_will_take_within_its_first_steps(tmp_path):
    "sink-nb train on a pipe: the first line names the device and bf16 autocast (and the CPU's bf16), then a timing."
    sink_nb = os.path.join(os.path.dirname(sys.executable), 'sink-nb')
    from sink_nb.train import cpu_bf16
    if cpu_bf16() is False:                                  # bf16 would be emulated here: refused, never chosen silently
        r = subprocess.run([sink_nb, 'train', '--config', 'demo-softmax', 'steps=60', 'dtype=bf16',
                            f'out_dir={tmp_path / "run"}'], capture_output=True, text=True)
        assert r.returncode != 0 and 'pass dtype=fp32' in r.stderr and not (tmp_path / 'run').exists(), r.stderr
        return
    proc = subprocess.Popen([sink_nb, 'train', '--config', 'demo-softmax', 'steps=60', 'eval_every=50', 'dtype=bf16',
                             f'out_dir={tmp_path / "run"}'], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=os.environ | {'OMP_WAIT_POLICY': 'PASSIVE'})
    try:
        lines = [proc.stdout.readline() for _ in range(3)]           # how it computes, step 0's evaluation, the pace
    finally:
        proc.kill(); proc.wait()
    assert 'on cpu' in lines[0] and 'bf16 autocast' in lines[0] and 'bf16' in lines[0].split('autocast', 1)[1], lines
    assert 'step 0: val loss' in lines[1], lines
    pace = lines[2]
    assert ' s a step' in pace and '60 steps take about' in pace and 'step 50' not in pace, lines
