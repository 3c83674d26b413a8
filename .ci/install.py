"""Install packages into .venv with uv where uv can do exactly what pip's configuration asks, else with pip.

`python .ci/install.py LOG [pip install arguments...]`, run by `.ci/test` with .venv's Python: pip took 70-100 s of CI's
2-core machine for the main install (one file at a time), uv 11-15 s with a cold cache, for the same versions (checked
with `pip freeze` on both). uv reads none of pip's configuration, so it is handed pip's as options: the index, the
extra indexes, find-links, constraints and the certificate, as `pip config list` shows them (files and PIP_*
variables). A setting uv cannot be told (say `pre` or `only-binary`), uv that cannot be installed, or uv failing is
said in one line and pip does the install, as before. uv's cache is .venv/uv-cache: inside the clone, next to what it
fills, and a second run of `.ci/test` finds it warm. The full log of either tool is LOG."""
import os, shlex, subprocess, sys
from pathlib import Path

# pip options uv is given as options of its own (pip's name -> uv's); each value may list several, space-separated
AS_OPTIONS = {'index-url': '--index-url', 'extra-index-url': '--extra-index-url', 'find-links': '--find-links',
              'constraint': '--constraint', 'trusted-host': '--allow-insecure-host'}
# pip options that change nothing about what is installed: how pip talks, waits and prints
IGNORED = {'default-timeout', 'timeout', 'retries', 'disable-pip-version-check', 'progress-bar', 'no-input', 'quiet',
           'verbose', 'no-color', 'root-user-action', 'no-python-version-warning', 'require-virtualenv', 'no-cache-dir',
           'cache-dir', 'log', 'no-compile'}
SECTIONS = ('global', 'install', ':env:')   # later ones win: pip's [install] over [global], PIP_* over both


class CannotMirror(ValueError): "A pip setting uv cannot be given."


def pip_settings(listing:str) -> dict[str, str]:
    "pip's settings for `pip install`, from `pip config list`'s lines (section.name='value'), later sections winning."
    found = {}
    for line in listing.splitlines():
        key, sep, value = line.partition('=')
        section, dot, name = key.rpartition('.')
        if not (sep and dot) or section not in SECTIONS: continue      # another command's section: not ours
        found[(SECTIONS.index(section), name)] = shlex.split(value)[0] if value.strip() else ''
    return {name: value for (_, name), value in sorted(found.items())}


def uv_options(settings:dict[str, str]) -> tuple[list[str], dict[str, str]]:
    "uv's options and environment for pip's `settings`; CannotMirror names the first setting uv cannot be given."
    options, env = ['--index-strategy', 'unsafe-best-match'], {}     # pip's choice: the best version over every index
    for name, value in settings.items():
        if name in AS_OPTIONS: options += [x for v in value.split() for x in (AS_OPTIONS[name], v)]
        elif name == 'no-index' and value.lower() in ('1', 'true', 'yes', 'on'): options.append('--no-index')
        elif name == 'cert': env['SSL_CERT_FILE'] = value
        elif name not in IGNORED: raise CannotMirror(f"pip's setting {name}={value!r} has no uv equivalent here")
    return options, env


def with_uv(python:Path, args:list[str], log) -> str|None:
    "Install `args` with uv; None when done, else why not (then nothing is assumed installed)."
    listing = subprocess.run([str(python), '-m', 'pip', 'config', 'list'], capture_output=True, text=True)
    if listing.returncode: return f'`pip config list` failed: {listing.stderr.strip()[-300:]}'
    try: options, env = uv_options(pip_settings(listing.stdout))
    except CannotMirror as e: return str(e)
    uv = python.parent / 'uv'
    if not uv.exists():
        got = subprocess.run([str(python), '-m', 'pip', 'install', '-q', 'uv'], stdout=log, stderr=subprocess.STDOUT)
        if got.returncode or not uv.exists(): return f'uv could not be installed into {python.parent.parent} (see the log)'
    env = dict(os.environ, UV_CACHE_DIR=str(python.parent.parent / 'uv-cache'), UV_NO_PROGRESS='1', **env)
    print(f"  install: uv, given pip's settings as {' '.join(options)}", flush=True)
    done = subprocess.run([str(uv), 'pip', 'install', '--python', str(python), *options, *args], env=env, stdout=log,
                          stderr=subprocess.STDOUT)
    if done.returncode < 0:                          # stopped by a signal (SIGTERM, a Ctrl-C): stop, no pip after it
        raise SystemExit(f'.ci/install.py: uv was stopped by signal {-done.returncode}; nothing else is installed')
    return None if done.returncode == 0 else f'uv pip install ended with status {done.returncode} (see the log)'


def main(log_path:str, *args:str) -> int:
    python = Path(sys.executable)
    with open(log_path, 'w') as log:
        why = with_uv(python, list(args), log)
        if why is None: return 0
        print(f'  install: pip, not uv: {why}', flush=True)
        log.write(f'\n== pip, not uv: {why}\n')
        log.flush()
        return subprocess.run([str(python), '-m', 'pip', 'install', '--no-compile', *args], stdout=log,
                              stderr=subprocess.STDOUT).returncode


if __name__ == '__main__':
    if len(sys.argv) < 3: sys.exit('usage: python .ci/install.py LOG PACKAGE_OR_OPTION...')
    sys.exit(main(*sys.argv[1:]))
