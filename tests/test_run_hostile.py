"""A hostile user against run folders (issue 20): each case here failed on d19a708 — a wrong number shown without a word,
a run counted twice, a traceback instead of a message — and must now be refused with one clear line or handled."""
import json, os, shutil, subprocess, time
from pathlib import Path

import pytest
from _cli import sink_nb_cli

DEMO = ('--config', 'demo-softmax', 'steps=20', 'eval_every=10', 'checkpoint_every=10', 'probe_n=16',
        'corpus_args={n: 1536}', 'progress=false')


def cli(*args, timeout=300):
    return sink_nb_cli(*args, timeout=timeout)


def train(out, *overrides):
    res = cli('train', *DEMO, f'out_dir={out}', *overrides)
    assert res.returncode == 0, res.stderr[-2000:]
    return Path(out)


@pytest.fixture(scope='module')
def run(tmp_path_factory):
    return train(tmp_path_factory.mktemp('runs') / 'softmax' / 'seed0')


def test_compare_counts_a_run_once_however_its_folder_is_spelled(run, tmp_path):
    res = cli('compare', run, f'{run}/', run / '..' / 'seed0', '--json', tmp_path / 'c.json')
    assert res.returncode == 0, res.stderr
    summary = json.loads((tmp_path / 'c.json').read_text())['summary']
    assert [s['n'] for s in summary.values()] == [1], summary                     # before: n = 3
    assert 'each run counts once' in res.stderr


def test_compare_tells_variants_apart_by_settings_and_refuses_one_seed_twice(run, tmp_path):
    other = train(tmp_path / 'b' / 'seed0', 'lr=0.02')                             # the same folder name, other settings
    res = cli('compare', run, other, '--json', tmp_path / 'c.json')
    assert res.returncode == 0, res.stderr
    summary = json.loads((tmp_path / 'c.json').read_text())['summary']
    assert sorted(summary) == ['demo-softmax (lr=0.01)', 'demo-softmax (lr=0.02)'], summary   # before: one variant, n=2
    copy = tmp_path / 'copy'; shutil.copytree(run, copy)
    res = cli('compare', run, copy)
    assert res.returncode != 0 and 'same variant with the same seed (0)' in res.stderr, res.stderr[-1000:]


def test_mitigations_refuses_a_name_given_twice_before_training(tmp_path):
    res = cli('mitigations', '--only', 'softmax', 'softmax', '--steps', '50', '--seeds', '1', '--out', tmp_path / 'm',
              timeout=120)
    assert res.returncode != 0 and 'more than once' in res.stderr, res.stderr[-1000:]   # before: n = 2 of one run
    assert not (tmp_path / 'm' / 'softmax').exists()


def test_mitigations_refuses_an_out_folder_holding_other_files(tmp_path):
    out = tmp_path / 'm'; out.mkdir(); (out / 'notes.txt').write_text('mine')
    res = cli('mitigations', '--only', 'softmax', '--steps', '50', '--seeds', '1', '--out', out, timeout=120)
    assert res.returncode != 0 and 'notes.txt' in res.stderr and (out / 'notes.txt').exists(), res.stderr[-1000:]
    assert list(out.iterdir()) == [out / 'notes.txt']                             # before: trained beside them


@pytest.mark.parametrize('line', ['42', '[1, 2]', 'NaN', '{"sink": null}', '{"step": 10, "sink": {"1": 500}}'])
def test_compare_names_and_drops_a_foreign_log_line(run, tmp_path, line):
    from sink_nb.runs import Run
    copy = tmp_path / 'r'; shutil.copytree(run, copy)
    with open(copy / Run.METRICS, 'a') as f: f.write(line + '\n')
    res = cli('compare', copy)
    assert res.returncode == 0 and 'Traceback' not in res.stderr, res.stderr[-1500:]   # before: a traceback
    assert 'line 4 dropped' in res.stderr, res.stderr[-1500:]


def test_resume_without_a_usable_checkpoint_says_so_and_checks_the_settings(run, tmp_path):
    copy = tmp_path / 'r'; shutil.copytree(run, copy)
    for step in (copy / 'checkpoints').iterdir(): shutil.rmtree(step)
    res = cli('train', *DEMO, f'out_dir={copy}', 'resume=true', 'lr=0.05')
    assert res.returncode != 0 and 'lr: 0.01 -> 0.05' in res.stderr, res.stderr[-1500:]   # before: a new run, silently
    res = cli('train', *DEMO, f'out_dir={copy}', 'resume=true')
    assert res.returncode == 0 and 'no usable checkpoint' in res.stderr, res.stderr[-1500:]


def test_a_moved_run_resumes_and_an_empty_lock_is_explained(run, tmp_path):
    moved = tmp_path / 'moved'; shutil.copytree(run, moved)
    res = cli('train', *DEMO, f'out_dir={moved}', 'resume=true', 'steps=30', 'allow_changes=[steps]')
    assert res.returncode == 0, res.stderr[-1500:]                                   # before: out_dir counted as a change
    (moved / '.lock').write_text('')                                                 # a process killed as it took the lock
    res = cli('train', *DEMO, f'out_dir={moved}', 'resume=true', 'steps=30')
    assert res.returncode != 0 and f"delete {moved / '.lock'}" in res.stderr, res.stderr[-1500:]
    os.utime(moved / '.lock', (time.time() - 120, time.time() - 120))               # ... two minutes ago
    res = cli('train', *DEMO, f'out_dir={moved}', 'resume=true', 'steps=30')
    assert res.returncode == 0 and 'empty or unreadable' in res.stderr, res.stderr[-1500:]


def test_an_override_without_equals_is_one_line(tmp_path):
    res = cli('train', '--config', 'demo-softmax', 'noequals', f'out_dir={tmp_path / "r"}')
    assert res.returncode != 0 and "overrides must look like key=value, got 'noequals'" in res.stderr, res.stderr


def test_token_ids_past_the_vocabulary_are_named(tmp_path):
    shards = tmp_path / 'shards'
    assert cli('prepare', 'sherlock', '--out', shards, '--val-docs', '10', '--quiet').returncode == 0
    meta = json.loads((shards / 'meta.json').read_text())
    shard = shards / 'train' / meta['parts']['train']['shards'][0]['file']
    shard.write_bytes((300).to_bytes(2, 'little') * (shard.stat().st_size // 2))    # every id 300, vocabulary 258
    res = cli('train', '--config', 'demo-softmax', f'corpus={shards}', 'tokenizer=bytes', 'vocab_size=258', 'steps=4',
              'eval_every=2', 'probe_n=4', f'out_dir={tmp_path / "r"}', 'progress=false')
    assert res.returncode != 0 and 'token ids up to 300' in res.stderr and 'Traceback' not in res.stderr, res.stderr[-1500:]


def test_a_full_disk_during_training_is_one_line(tmp_path):
    disk = tmp_path / 'disk'; disk.mkdir()
    if subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=1200k', 'tmpfs', str(disk)], capture_output=True).returncode:
        pytest.skip('cannot mount a small tmpfs here (needs root)')
    try:
        res = cli('train', '--config', 'demo-softmax', 'steps=20',
                  'checkpoint_every=10', 'eval_every=10', 'probe_n=8', 'corpus_args={n: 1536}', f'out_dir={disk / "r"}',
                  'progress=false')
        assert res.returncode != 0 and 'Traceback' not in res.stderr, res.stderr[-1500:]
        assert 'not enough disk space' in res.stderr and 'MiB free' in res.stderr, res.stderr   # before: "0.00 GiB"
    finally: subprocess.run(['umount', str(disk)])


def test_a_long_log_is_read_once_and_its_end_is_what_status_says(run, tmp_path):
    import tracemalloc
    from sink_nb.runs import Run
    copy = tmp_path / 'r'; shutil.copytree(run, copy)
    line = ('{"step": %d, "tokens": %d, "lr": 0.0004, "loss": 2.5, "val_loss": 2.4, "sink": {"1": 12.5, "2": 3.0, '
            '"3": 1.0, "4": 0.5, "5": 0.25}, "time": 1.5}\n')
    write = lambda n: (copy / Run.METRICS).write_text(''.join(line % (s, s * 4096) for s in range(n)))
    write(100_000)                                                                                      # 16 MB
    said = repr(Run(copy))
    assert 'inconsistent: its log runs to step 99999, past the 20 steps it is set to' in said, said   # not 'complete'
    write(20_000)                                                   # memory, with tracemalloc's slowdown, on less
    tracemalloc.start()
    try:
        Run(copy).status; status_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak(); kept = Run(copy).metrics(quiet=True)
        held, peak = tracemalloc.get_traced_memory()
    finally: tracemalloc.stop()
    assert status_peak < 2 ** 20, status_peak                       # a step and the events kept, not the log
    assert len(kept) == 20_000 and kept[-1].sink[5] == 0.25
    assert peak < 1.2 * held + 2 ** 20, (peak, held)                # what it returns, and a line besides
