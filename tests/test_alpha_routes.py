"""bench/measure_speed.py times α by the route `--alpha-route` names and prints the route α took (issue 54, item 1):
every route gives the same α on the tiny Llama, and a route the device cannot run is refused before the model loads."""
import json, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / 'bench' / 'measure_speed.py'


def _run(*args, timeout=600):
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize('route', ['flex', 'chunked', 'auto'])
def test_measure_speed_prints_the_alpha_route_it_took(tmp_path, route):
    out = _run('--model', 'tiny', '--T', '64', '--alpha-route', route, '--out', str(tmp_path / 'ms.txt'),
               '--json', str(tmp_path / 'rows.json'))
    assert out.returncode == 0, out.stderr
    took = 'flash-cpu' if route == 'auto' else route                    # auto on CPU in float32: the flash kernel
    row, = json.loads((tmp_path / 'rows.json').read_text())['rows']
    assert row['alpha_route'] == took and max(row['measure_vs_f64'], row['max_delta']) <= 1e-6, row
    text = (tmp_path / 'ms.txt').read_text()
    assert f'--alpha-route {route} (resolves to {took})' in text
    line = next(l for l in text.splitlines() if l.split()[:1] == ['64'])
    assert line.split()[-1] == took


def test_measure_speed_refuses_a_route_the_device_cannot_run(tmp_path):
    out = _run('--model', 'tiny', '--T', '64', '--device', 'cuda', '--alpha-route', 'flash-cpu',
               '--out', str(tmp_path / 'ms.txt'), timeout=120)
    assert out.returncode == 2 and "alpha_route='flash-cpu' cannot compute α here" in out.stderr
    assert "CPU flash kernel" in out.stderr and not (tmp_path / 'ms.txt').exists()


def test_measure_speed_refuses_an_unknown_route(tmp_path):
    out = _run('--model', 'tiny', '--alpha-route', 'triton', timeout=120)
    assert out.returncode == 2 and '--alpha-route' in out.stderr and 'triton' in out.stderr
