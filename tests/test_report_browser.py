"""`sink-nb report` pages in a real browser: a demo run's here, SmolLM2's GGUF file's in tests/test_report.py (on the
report that module makes once), each with both costs, opened offline in Debian's chromium.

Per page: one inline SVG per chart, every chart's text inside its SVG box, no tick labels of one axis overlapping,
no mark group drawing nothing, no raw TeX, nothing fetched from the network, the strongest head's token labels read as
text, and the two cost tables shown. A full-page screenshot goes to tests/artifacts/report/ (gitignored). Skipped when
chromium or playwright is missing, unless CI is set.
"""
import json, re
from pathlib import Path

import pytest
from _browser import CHROMIUM, FLAGS, MEASURE_SVG, chart_problems, require_browser
from test_report import run

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / 'tests' / 'artifacts' / 'report'

REPORT_FACTS = r"""() => {
  const main = document.querySelector('.sink-report');
  const prose = main.cloneNode(true);
  prose.querySelectorAll('svg, style').forEach(e => e.remove());
  const inline = Array.from(main.querySelectorAll('svg')).filter(s => !s.parentElement.closest('svg'));
  const tables = Array.from(main.querySelectorAll('section table')).map(t => ({
    section: t.closest('section').id, rows: t.rows.length, width: t.getBoundingClientRect().width}));
  return {prose: prose.innerText, charts: inline.map(MEASURE_SVG), tables};
}""".replace('MEASURE_SVG', MEASURE_SVG)


def open_page(path:Path, shot:str) -> dict:
    "The page's facts as chromium drew it, and the URLs it tried to fetch; a screenshot saved as SHOTS/shot."
    from playwright.sync_api import sync_playwright
    external = []
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport=dict(width=1200, height=900))
            page.route('**/*', lambda route: route.continue_() if route.request.url.startswith('file://')
                       else (external.append(route.request.url), route.abort()))
            page.goto(path.as_uri(), wait_until='load')
            facts = page.evaluate(REPORT_FACTS)
            page.screenshot(path=str(SHOTS / shot), full_page=True)
        finally:
            browser.close()
    return facts | dict(external=external)


def page_problems(name:str, facts:dict, data:dict) -> list[str]:
    "What is wrong with one report page as chromium drew it."
    bad = chart_problems(name, facts['charts'])
    charts = 4 + (data['heads']['labels'] is not None) + (data.get('slot') is not None)   # + taxonomy, + key slot
    if len(facts['charts']) != charts: bad.append(f"{name}: {len(facts['charts'])} charts drawn, {charts} expected")
    if '$$' in facts['prose'] or re.search(r'\$\\[A-Za-z]', facts['prose']): bad.append(f'{name}: raw TeX on the page')
    if facts['external']: bad.append(f"{name}: fetched from the network: {facts['external'][:3]}")
    shown = {t['section'] for t in facts['tables'] if t['rows'] > 1 and t['width'] > 100}
    present = dict(quantisation=data['quantisation'], eviction=data['eviction'], heads=data['heads']['counts'],
                   secondary=(data.get('secondary') or {}).get('rows'))
    for part, there in present.items():
        if there and part not in shown: bad.append(f'{name}: the {part} table is not shown')
    words = [t.strip() for t in data['strongest']['tokens'][1:] if len(t.strip()) > 1]   # '12 the': position, token
    drawn = [t['s'] for c in facts['charts'] for t in c['texts']]
    if not any(d.endswith(' ' + w) for d in drawn for w in words):
        bad.append(f"{name}: none of the strongest head's token labels is drawn as text")
    return bad


@pytest.fixture(scope='module')
def pages(tmp_path_factory):
    "The report folder of a short demo run, with --quantize and --evict (SmolLM2's page: tests/test_report.py)."
    require_browser('the report browser test', ('playwright',))
    tmp = tmp_path_factory.mktemp('report-browser')
    done = run('train', '--config', 'demo-softmax', 'steps=8', 'checkpoint_every=8', 'eval_every=8', 'probe_n=6',
               'progress=false', f'out_dir={tmp / "demo"}')
    assert done.returncode == 0, done.stderr
    done = run('report', tmp / 'demo', '--quantize', '--evict', '--out', tmp / 'run', '--quiet')
    assert done.returncode == 0, done.stderr
    return dict(run=tmp / 'run')


@pytest.mark.parametrize('name', ['run'])
def test_a_report_page_draws_its_charts_and_tables_offline(pages, name):
    data = json.loads((pages[name] / 'report.json').read_text())
    facts = open_page(pages[name] / 'report.html', f'{name}.png')
    problems = page_problems(name, facts, data)
    assert not problems, '\n'.join(problems)
    assert (SHOTS / f'{name}.png').stat().st_size > 10_000


def test_page_problems_catches_what_it_claims():
    "The checker itself: a missing chart, raw TeX, a fetch, a missing table and undrawn token labels are each reported."
    data = dict(heads=dict(labels=[['sink']], counts=dict(sink=1)), quantisation=dict(rows=[1]),
                eviction=dict(policies=dict(dense=1)), strongest=dict(tokens=['<s>', 'The', 'cat']),
                secondary=dict(rows=[dict(sample=0, position=5)]))
    facts = dict(charts=[], prose='α is $\\alpha$', external=['https://cdn.example/x.js'], tables=[])
    bad = page_problems('p', facts, data)
    for needle in ('0 charts drawn', 'raw TeX', 'network', 'quantisation table', 'eviction table', 'heads table',
                   'secondary table', 'token labels'):
        assert any(needle in b for b in bad), (needle, bad)
