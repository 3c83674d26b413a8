"""SinkExplorer in a real browser: JupyterLab on 127.0.0.1, Debian's chromium driven by playwright.

Opens a notebook that builds a planted-sink SinkResult and shows `SinkExplorer`, runs it, moves the layer slider
with the keyboard and checks that the drawn charts changed. The screenshot goes to the test's tmp directory and to
tests/artifacts/explorer.png (gitignored). Skipped when chromium or playwright is missing, unless CI is set.
"""
import json, os, secrets, shutil, socket, subprocess, sys, time, urllib.request
from pathlib import Path

import pytest
from _browser import CHROMIUM, FLAGS, require_browser

ROOT = Path(__file__).resolve().parent.parent
CELLS = [
    "import torch\n"
    "from sink_nb.attention import attention_weights\nfrom sink_nb.metrics import planted_sink_qk\n"
    "from sink_nb.metrics import importance_from_qk\n"
    "from sink_nb.results import SinkResult\n"
    "from sink_nb.explore import SinkExplorer",
    "q, k, _ = planted_sink_qk(n=2, n_layer=4, n_head=8, T=24)\n"
    "alpha = torch.stack([importance_from_qk(q[l], k[l]) for l in range(4)], 1)\n"
    "res = SinkResult(alpha, [[f't{i}' for i in range(24)]] * 2, 'planted')\n"
    "ex = SinkExplorer(res, pattern=lambda s, l, h: attention_weights(q[l, s], k[l, s])[h])\n"
    "ex",
]


def _notebook(path: Path):
    cells = [dict(cell_type='code', metadata={}, source=src, execution_count=None, outputs=[]) for src in CELLS]
    nb = dict(cells=cells, metadata=dict(kernelspec=dict(name='python3', display_name='Python 3', language='python')), nbformat=4, nbformat_minor=5)
    path.write_text(json.dumps(nb, indent=1))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0)); return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path):
    "A JupyterLab server on 127.0.0.1 serving a copy of the explorer notebook; yields (url, tmp_path)."
    require_browser('the browser test', ('playwright', 'jupyterlab', 'ipykernel', 'altair', 'anywidget', 'ipywidgets',
                                         'vl_convert'))
    root, home = tmp_path / 'root', tmp_path / 'home'
    root.mkdir(); home.mkdir()
    _notebook(root / 'explorer.ipynb')
    token, port = secrets.token_hex(16), _free_port()
    env = os.environ | dict(JUPYTER_CONFIG_DIR=str(home / 'config'), JUPYTER_RUNTIME_DIR=str(home / 'runtime'),
                            JUPYTERLAB_SETTINGS_DIR=str(home / 'settings'), JUPYTERLAB_WORKSPACES_DIR=str(home / 'workspaces'),
                            PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get('PYTHONPATH', ''))
    log = open(tmp_path / 'lab.log', 'w')
    args = ['--no-browser', f'--IdentityProvider.token={token}', f'--port={port}', '--ip=127.0.0.1', f'--ServerApp.root_dir={root}',
            '--LabApp.news_url=None', '--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate']
    if hasattr(os, 'geteuid') and os.geteuid() == 0: args.append('--allow-root')      # CI containers run as root
    proc = subprocess.Popen([sys.executable, '-m', 'jupyter', 'lab', *args],
                            stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
    url = f'http://127.0.0.1:{port}'
    try:
        for _ in range(120):
            if proc.poll() is not None: pytest.fail(f'jupyter lab exited: {(tmp_path / "lab.log").read_text()[-2000:]}')
            try:
                urllib.request.urlopen(f'{url}/api/status?token={token}', timeout=1); break
            except OSError: time.sleep(0.25)
        else: pytest.fail(f'jupyter lab did not answer within 30 s: {(tmp_path / "lab.log").read_text()[-2000:]}')
        yield f'{url}/lab/tree/explorer.ipynb?token={token}', tmp_path
    finally:
        proc.terminate()                        # the server shuts its kernels down on SIGTERM
        try: proc.wait(15)
        except subprocess.TimeoutExpired: proc.kill(); proc.wait()
        log.close()


def _charts_pixels(page) -> list[str]:
    "The four charts as PNG data URLs of their canvases."
    return page.evaluate("() => Array.from(document.querySelectorAll('.vega-embed canvas')).map(c => c.toDataURL())")


def test_layer_slider_redraws_the_explorer(lab):
    from playwright.sync_api import sync_playwright, expect
    url, tmp = lab
    t0 = time.time()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport=dict(width=1400, height=1100))
            external = []                                        # offline: nothing but the local server may be fetched
            page.route('**/*', lambda route: route.continue_() if route.request.url.startswith('http://127.0.0.1')
                       else (external.append(route.request.url), route.abort()))
            page.goto(url)
            page.wait_for_selector('.jp-Notebook .jp-Cell', timeout=30_000)
            expect(page.locator('.jp-StatusBar-TextItem', has_text='Idle').first).to_be_visible(timeout=30_000)   # kernel started
            page.locator('.jp-Notebook .jp-Cell .jp-InputArea-editor').first.click()
            page.keyboard.press('Shift+Enter'); page.keyboard.press('Shift+Enter')            # run both cells
            slider = page.locator('.widget-hslider', has=page.locator('.widget-label', has_text='layer')).first
            slider.wait_for(timeout=60_000)
            page.wait_for_function("() => document.querySelectorAll('.vega-embed canvas').length >= 4", timeout=30_000)
            info = page.locator('.widget-html', has_text='head 7').first
            expect(info).to_contain_text('layer 3, head 7', timeout=15_000)
            page.wait_for_timeout(500)                                   # let the first draw settle
            before = _charts_pixels(page)
            readout = slider.locator('.widget-readout')
            expect(readout).to_have_text('3')
            slider.locator('.noUi-handle').first.focus()
            page.keyboard.press('ArrowLeft')                      # layer 3 -> 2
            expect(readout).to_have_text('2', timeout=5_000)
            expect(info).to_contain_text('layer 2, head 7', timeout=15_000)
            page.wait_for_function("before => { const now = Array.from(document.querySelectorAll('.vega-embed canvas')).map(c => c.toDataURL());"
                                   " return now.length === before.length && now.every((u, i) => u !== before[i]); }", arg=before, timeout=15_000)
            after = _charts_pixels(page)
            assert len(after) == 4 and all(a != b for a, b in zip(after, before)), 'every view must be redrawn for a new layer'
            assert not [u for u in external if 'vega' in u or 'jsdelivr' in u], f'charts fetched from the network: {external}'
            shot = tmp / 'explorer.png'
            page.locator('.jp-OutputArea-output').last.screenshot(path=str(shot))
            (ROOT / 'tests' / 'artifacts').mkdir(exist_ok=True)
            shutil.copy(shot, ROOT / 'tests' / 'artifacts' / 'explorer.png')
            print(f'screenshot: {shot} (copied to tests/artifacts/explorer.png), browser part {time.time() - t0:.1f} s, external requests blocked: {external}')
        except Exception:
            page.screenshot(path=str(tmp / 'failure.png'), full_page=True)
            print(f'failure screenshot: {tmp / "failure.png"}; lab log: {tmp / "lab.log"}')
            raise
        finally:
            browser.close()
