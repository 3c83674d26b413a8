"""Issue 37, the statistics and streaming surfaces from a shell: a run whose 32-token probe cannot vary Sink_1 at
ε = 0.1 is compared on every other column; `stream --sinks 0` is refused before any model loads (the policies
themselves, a late one included: tests/test_policies.py)."""

import pytest
from _cli import sink_nb_cli


def cli(*args, timeout=300):
    return sink_nb_cli(*args, timeout=timeout)


@pytest.fixture(scope='module')
def short_probe_run(tmp_path_factory):
    out = tmp_path_factory.mktemp('short') / 'seed0'
    res = cli('train', '--config', 'demo-softmax', 'steps=20', 'eval_every=10', 'probe_n=16', 'probe_T=32',
              'corpus_args={n: 1536}', 'progress=false', f'out_dir={out}')
    assert res.returncode == 0, res.stderr[-2000:]
    return out


def test_compare_marks_only_the_eps_the_probe_cannot_vary(short_probe_run, tmp_path):
    res = cli('compare', short_probe_run, '--json', tmp_path / 'c.json')
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    head, row = lines[0].split(), lines[1].split()
    assert head[4:7] == ['sink1@0.1', 'sink1@0.3', 'sink1@0.5'], head
    assert row[4] == '-' and row[5] != '-' and row[6] != '-', row                # ε = 0.1 marked, 0.3 and 0.5 shown
    note = next(l for l in lines if l.startswith('sink1@0.1:'))
    assert "'-' where not measured" in note and 'at T = 32' in note, note


def test_stream_refuses_no_sinks_before_loading(tmp_path):
    res = cli('stream', tmp_path / 'no-model', '--T', '64', '--window', '8', '--sinks', '0')
    assert res.returncode == 1 and 'Traceback' not in res.stderr, res.stderr[-2000:]
    assert 'sink-nb stream: --sinks = 0 keeps no first token: the sinks policy would keep no sinks' in res.stderr
    ok = cli('stream', tmp_path / 'no-model', '--T', '64', '--window', '8', '--sinks', '0', '--policies', 'window')
    assert '--sinks' not in ok.stderr                          # no sinks policy asked: the flag plays no part
