"What the browser tests share: Debian's chromium, its flags, and skipping (or failing under CI) when parts are missing."
import os
from pathlib import Path

import pytest

CHROMIUM = '/usr/bin/chromium'
FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
         '--disable-sync', '--no-first-run']


def require_browser(test:str, modules:tuple):
    "Skip `test` when chromium or a python module is missing; under CI that is a failure (.ci/test installs them)."
    missing = [] if Path(CHROMIUM).exists() else [f'{CHROMIUM} (apt-get install chromium)']
    for mod in modules:
        try: __import__(mod)
        except ImportError: missing.append(f'python package {mod}')
    if not missing: return
    if os.environ.get('CI'): pytest.fail(f'CI is set but {test} needs: {", ".join(missing)} (.ci/test installs them)')
    pytest.skip(f'{test} needs: {", ".join(missing)}')
