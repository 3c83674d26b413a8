""".ci/install.py: uv is handed pip's configuration as options (the index, extra indexes, find-links, constraints, the
certificate), later sections winning as in pip; a setting uv cannot be given sends the install to pip, said in a line."""
import importlib.util, subprocess, sys, zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location('ci_install', ROOT / '.ci' / 'install.py')
ci_install = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ci_install)

LISTING = """:env:.cert='/etc/ssl/certs/ca-certificates.crt'
:env:.default-timeout='180'
:env:.find-links='/opt/wheels'
global.cert='/old/ca.crt'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/elsewhere'
download.pre='1'
"""


def test_pip_settings_take_the_later_section_and_skip_other_commands():
    settings = ci_install.pip_settings(LISTING)
    assert settings['find-links'] == '/opt/wheels' and settings['cert'] == '/etc/ssl/certs/ca-certificates.crt'
    assert settings['extra-index-url'] == 'file:///opt/pypi/simple file:///opt/pypi-more/simple'
    assert 'pre' not in settings                                  # `pip download`'s setting, not `pip install`'s
    assert ci_install.pip_settings("install.index-url='https://a'\nglobal.index-url='https://b'") == \
        {'index-url': 'https://a'}                                 # [install] over [global], whatever the order listed


def test_uv_is_given_every_index_setting_and_the_certificate():
    options, env = ci_install.uv_options(ci_install.pip_settings(LISTING))
    pairs = list(zip(options[::2], options[1::2]))
    assert pairs[0] == ('--index-strategy', 'unsafe-best-match')
    assert set(pairs[1:]) == {('--find-links', '/opt/wheels'), ('--constraint', '/etc/xdg/pip/constraints.txt'),
                              ('--extra-index-url', 'file:///opt/pypi/simple'),
                              ('--extra-index-url', 'file:///opt/pypi-more/simple')}
    assert env == {'SSL_CERT_FILE': '/etc/ssl/certs/ca-certificates.crt'}
    assert ci_install.uv_options({'no-index': 'true', 'trusted-host': 'a b'})[0][2:] == \
        ['--no-index', '--allow-insecure-host', 'a', '--allow-insecure-host', 'b']


@pytest.mark.parametrize('setting', ['pre', 'only-binary', 'proxy', 'upgrade-strategy'])
def test_a_setting_uv_cannot_be_given_is_named(setting):
    with pytest.raises(ci_install.CannotMirror, match=f"pip's setting {setting}="):
        ci_install.uv_options({'find-links': '/opt/wheels', setting: ':all:'})


def tiny_wheel(folder:Path) -> Path:
    "A one-module wheel, made by hand: installing it needs no index and no build."
    wheel = folder / 'ci_install_probe-0.1-py3-none-any.whl'
    info = 'ci_install_probe-0.1.dist-info'
    files = {'ci_install_probe.py': 'ANSWER = 42\n',
             f'{info}/METADATA': 'Metadata-Version: 2.1\nName: ci-install-probe\nVersion: 0.1\n',
             f'{info}/WHEEL': 'Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n'}
    with zipfile.ZipFile(wheel, 'w') as z:
        for name, text in files.items(): z.writestr(name, text)
        z.writestr(f'{info}/RECORD', ''.join(f'{name},,\n' for name in [*files, f'{info}/RECORD']))
    return wheel


def test_a_setting_uv_cannot_be_given_installs_with_pip_and_says_why(tmp_path):
    venv = tmp_path / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', str(venv)], check=True)
    python, log = venv / 'bin' / 'python', tmp_path / 'install.log'
    env = {k: v for k, v in __import__('os').environ.items() if not k.startswith('UV_')} | {'PIP_PRE': '1'}
    args = [str(python), str(ROOT / '.ci' / 'install.py'), str(log), '--no-index', '--no-deps']
    done = subprocess.run(args + [str(tiny_wheel(tmp_path))], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, log.read_text()[-2000:]
    assert "install: pip, not uv: pip's setting pre='1' has no uv equivalent here" in done.stdout, done.stdout
    assert not (venv / 'bin' / 'uv').exists()                      # refused before uv was fetched
    assert subprocess.run([str(python), '-c', 'import ci_install_probe as p; assert p.ANSWER == 42']).returncode == 0
    failed = subprocess.run(args + ['ci-install-probe-absent'], capture_output=True, text=True, env=env, timeout=300)
    assert failed.returncode != 0 and 'pip, not uv' in failed.stdout      # pip's failure is the script's


def test_uv_stopped_by_a_signal_stops_the_install_without_pip(tmp_path):
    "A uv ended by SIGTERM (or a Ctrl-C) is not a uv that failed: nothing is installed after it, not even by pip."
    venv = tmp_path / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', str(venv)], check=True)
    uv = venv / 'bin' / 'uv'                                        # found there, so none is fetched
    uv.write_text('#!/bin/sh\nkill -TERM $$\n')
    uv.chmod(0o755)
    env = {k: v for k, v in __import__('os').environ.items() if not k.startswith(('UV_', 'PIP_PRE'))}
    done = subprocess.run([str(venv / 'bin' / 'python'), str(ROOT / '.ci' / 'install.py'), str(tmp_path / 'log'),
                           '--no-index', '--no-deps', str(tiny_wheel(tmp_path))], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode != 0 and 'uv was stopped by signal 15' in done.stderr, (done.stdout, done.stderr)
    assert 'pip, not uv' not in done.stdout
    assert subprocess.run([str(venv / 'bin' / 'python'), '-c', 'import ci_install_probe']).returncode != 0
