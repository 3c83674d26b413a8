"""`sink_nb_cli` (tests/_cli.py) answers as the console script does: the same status, stdout and stderr for a refusal, a
usage error and --version; a timeout kills the call and raises as `subprocess.run` does; the zygote survives a call."""
import subprocess, time

import pytest
from _cli import SINK_NB, sink_nb_cli


@pytest.mark.parametrize('args', [('--version',), ('compare', 'no-such-run'), ('study', 'optimisation'),
                                  ('train', '--config', 'demo-softmax', 'steps=-5')])
def test_a_call_answers_as_the_console_script(args, tmp_path):
    plain = subprocess.run([str(SINK_NB), *args], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    warm = sink_nb_cli(*args, cwd=tmp_path)
    assert (warm.returncode, warm.stdout, warm.stderr) == (plain.returncode, plain.stdout, plain.stderr)
    assert plain.returncode == 0 if args == ('--version',) else plain.returncode != 0, plain


def test_a_timeout_kills_the_call_and_the_next_call_runs(tmp_path):
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        sink_nb_cli('train', '--config', 'demo-softmax', 'steps=100000', f'out_dir={tmp_path / "run"}', timeout=3)
    assert time.monotonic() - started < 60
    assert sink_nb_cli('--version').returncode == 0
