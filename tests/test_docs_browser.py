"""The docs site in a real browser: every page of the offline build (`.ci/docs.py`) opened in Debian's chromium.

Per page it asserts that no TeX is left raw (no `$$`, no `$\\command`) outside code, that each display formula of the
source notebook became rendered MathML with a size, that every chart's text (legend, axis titles, tick labels) lies
inside the chart's SVG box, that tick labels of one axis do not overlap and that no mark group draws nothing, that relative links resolve to files of the
build and none points at the unpublished source repository. A page with a problem is saved as a full-page screenshot to
tests/artifacts/docs/ (gitignored); SINK_NB_DOCS_SHOTS=all saves every page's. Full-page screenshots of all 45 pages
took 78 of the test's 98 s on 2 cores, and no assertion reads them. Skipped when chromium or playwright is missing,
unless CI is set.
"""
import json, os, re, subprocess, sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from _browser import CHROMIUM, FLAGS, MEASURE_SVG, chart_problems, require_browser

ROOT = Path(__file__).resolve().parent.parent

# Measured in the page: everything the assertions need, in one round trip per page.
PAGE_FACTS = r"""() => {
  const main = document.querySelector('main');
  const prose = main.cloneNode(true);
  prose.querySelectorAll('pre, code, math, script, style').forEach(e => e.remove());
  const box = r => ({l: r.left, t: r.top, r: r.right, b: r.bottom, w: r.width, h: r.height});
  // nbconvert shows SVG outputs as <img src="data:image/svg+xml;base64,…">, clipped at the SVG's own width and height:
  // each is decoded and measured, alone, in an off-screen copy; inline <svg> charts are measured where they are.
  const decode = src => { const [head, data] = src.split(',', 2);
    if (!head.endsWith(';base64')) return decodeURIComponent(data);
    return new TextDecoder().decode(Uint8Array.from(atob(data), c => c.charCodeAt(0))); };
  const imgs = Array.from(main.querySelectorAll('img')).filter(im => (im.getAttribute('src') || '').startsWith('data:image/svg+xml'));
  const inline = Array.from(main.querySelectorAll('svg')).filter(s => !s.parentElement.closest('svg'));
  const measure = MEASURE_SVG;
  const charts = inline.map(measure);
  imgs.forEach((im, j) => {
    const holder = document.createElement('div');
    holder.style.cssText = 'position:absolute;left:0;top:0;';
    holder.innerHTML = decode(im.getAttribute('src'));
    document.body.appendChild(holder);
    charts.push(measure(holder.querySelector('svg'), inline.length + j));
    holder.remove();
  });
  const maths = Array.from(main.querySelectorAll('math')).map(m => ({block: m.getAttribute('display') === 'block',
                                                                  ...box(m.getBoundingClientRect())}));
  const links = Array.from(main.querySelectorAll('a[href]')).map(a => a.getAttribute('href'));
  const unloaded = Array.from(main.querySelectorAll('img')).filter(im => !im.complete || im.naturalWidth === 0)
    .map(im => (im.getAttribute('src') || '').slice(0, 80));
  return {prose: prose.innerText, charts, maths, links, unloaded, src: document.querySelector('footer').innerText};
}""".replace('MEASURE_SVG', MEASURE_SVG)


@pytest.fixture(scope='module')
def site(tmp_path_factory):
    """The docs built offline into a fresh folder; yields it. Under .ci/test the folder its docs step built from this
    same tree (SINK_NB_DOCS_BUILT) is opened instead of building it twice."""
    require_browser('the docs browser test', ('playwright', 'latex2mathml', 'nbconvert'))
    built = os.environ.get('SINK_NB_DOCS_BUILT')
    if built:
        assert (Path(built) / 'site.css').is_file(), f'SINK_NB_DOCS_BUILT={built} is not a docs build of .ci/docs.py'
        return Path(built)
    out = tmp_path_factory.mktemp('site') / '_docs'
    r = subprocess.run([sys.executable, str(ROOT / '.ci' / 'docs.py'), '--out', str(out)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, f'docs build failed:\n{r.stdout}\n{r.stderr[-3000:]}'
    return out


def display_formulas(notebook:Path) -> int:
    "`$$…$$` formulas in the markdown cells of a notebook: what the page must show as block MathML."
    nb = json.loads(notebook.read_text())
    md = [''.join(c['source']) for c in nb['cells'] if c['cell_type'] == 'markdown']
    return sum(len(re.findall(r'\$\$.+?\$\$', re.sub(r'```.*?```|`[^`\n]*`', '', m, flags=re.S), re.S)) for m in md)


def page_problems(facts:dict, page:Path, site:Path, source_url:str) -> list[str]:
    "What is wrong with one rendered page, as sentences naming the page and the element."
    name, bad = page.relative_to(site).as_posix(), []
    if '$$' in facts['prose']: bad.append(f'{name}: raw display TeX left: …{facts["prose"].split("$$")[1][:60]}…')
    for m in re.finditer(r'\$\\[A-Za-z]+', facts['prose']): bad.append(f'{name}: raw inline TeX left: {facts["prose"][m.start():m.start() + 40]!r}')
    src = ROOT / 'nbs' / facts['src'].split('Built offline from ')[1].split(' by ')[0]
    want, got = display_formulas(src), sum(m['block'] for m in facts['maths'])
    if got != want: bad.append(f'{name}: {want} display formulas in {src.name}, {got} rendered as MathML')
    bad += [f'{name}: a formula drawn with no size' for m in facts['maths'] if m['w'] < 1 or m['h'] < 1]
    bad += chart_problems(name, facts['charts'])
    bad += [f'{name}: an image that does not load: {src}' for src in facts['unloaded']]
    for href in facts['links']:
        if source_url and href.startswith(source_url): bad.append(f'{name}: link to the unpublished repository: {href}')
        u = urlparse(href)
        if not u.scheme and u.path and not (page.parent / unquote(u.path)).exists(): bad.append(f'{name}: broken link {href}')
    return bad


def visit(pages:list[Path], site:Path, source_url:str, shots:Path, every_shot:bool) -> tuple[list, list, int, int]:
    """Open each page in chromium: (problems, external URLs asked for, charts, formulas). A full-page screenshot of each
    page with a problem, or of every page with `every_shot`, goes to `shots`."""
    from playwright.sync_api import sync_playwright
    shots.mkdir(parents=True, exist_ok=True)
    problems, external, n_charts, n_math = [], [], 0, 0
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS + ['--allow-file-access-from-files'], headless=True)
        try:
            page = browser.new_page(viewport=dict(width=1400, height=1000))
            page.route('**/*', lambda route: route.continue_() if route.request.url.startswith('file://')
                       else (external.append(route.request.url), route.abort()))
            for path in pages:
                page.goto(path.as_uri(), wait_until='load')
                facts = page.evaluate(PAGE_FACTS)
                found = page_problems(facts, path, site, source_url)
                problems += found
                n_charts += len(facts['charts'])
                n_math += len(facts['maths'])
                if found or every_shot:                  # what one looks at when a page fails
                    shot = shots / (path.relative_to(site).as_posix().replace('/', '__')[:-5] + '.png')
                    page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    return problems, external, n_charts, n_math


def test_every_docs_page_renders_math_and_fits_its_charts(site):
    from configparser import ConfigParser
    cfg = ConfigParser(); cfg.read(ROOT / 'settings.ini')
    source_url = cfg['DEFAULT'].get('git_url', '').rstrip('/')
    pages = sorted(site.rglob('*.html'))
    assert len(pages) >= 15, f'only {len(pages)} pages built'
    shots = ROOT / 'tests' / 'artifacts' / 'docs'
    every_shot = os.environ.get('SINK_NB_DOCS_SHOTS') == 'all'
    problems, external, n_charts, n_math = visit(pages, site, source_url, shots, every_shot)
    print(f'{len(pages)} pages, {n_charts} SVG charts, {n_math} formulas; screenshots (pages with a problem) in {shots}')
    assert n_math > 0 and n_charts > 0, 'no formula or no chart found in the whole site: the page facts are not being read'
    assert not external, f'pages fetched from the network: {external[:5]}'
    assert not problems, '\n'.join(problems)


def test_page_problems_catches_what_it_claims(tmp_path):
    "The checker itself: a clipped legend, overlapping ticks, raw TeX and a broken link are each reported."
    (tmp_path / 'a.html').write_text('')
    nb = tmp_path / 'x.ipynb'
    frame = dict(l=0, t=0, r=100, b=50, w=100, h=50)
    facts = dict(prose='see $$x$$ and $\\alpha$', maths=[], unloaded=['images/gone.svg'], links=['missing.html', 'a.html', 'https://github.com/o/r/blob/x'],
                 src=f'Built offline from {nb} by .ci/docs.py',
                 charts=[dict(i=0, frame=frame, texts=[dict(s='legend', l=90, t=5, r=120, b=15, w=30, h=10)],
                              axes=[[dict(s='0.1', angle=False, l=10, t=40, r=30, b=48), dict(s='0.2', angle=False, l=25, t=40, r=45, b=48)]],
                              empty=1)])
    nb.write_text(json.dumps(dict(cells=[dict(cell_type='markdown', source=['$$x$$'])])))
    bad = page_problems(facts, tmp_path / 'a.html', tmp_path, 'https://github.com/o/r')
    for needle in ('raw display TeX', 'raw inline TeX', '1 display formulas', "'legend'", 'overlap', 'broken link missing.html',
                   'unpublished repository', 'draw nothing', 'does not load: images/gone.svg'):
        assert any(needle in b for b in bad), (needle, bad)


def test_only_a_page_with_a_problem_is_screenshot_unless_all_are_asked_for(tmp_path):
    "Two pages, one with raw TeX: its screenshot alone; with every_shot, both."
    require_browser('the docs browser test', ('playwright',))
    footer = '<footer>Built offline from 00_checks.ipynb by .ci/docs.py</footer>'
    (tmp_path / 'good.html').write_text(f'<html><body><main><p>fine</p></main>{footer}</body></html>')
    (tmp_path / 'bad.html').write_text(f'<html><body><main><p>raw $$x$$ left</p></main>{footer}</body></html>')
    pages = sorted(tmp_path.glob('*.html'))
    problems, external, _, _ = visit(pages, tmp_path, '', tmp_path / 'shots', every_shot=False)
    assert [p.split(':')[0] for p in problems] == ['bad.html'] and not external, problems
    assert sorted(p.name for p in (tmp_path / 'shots').iterdir()) == ['bad.png']
    visit(pages, tmp_path, '', tmp_path / 'all', every_shot=True)
    assert sorted(p.name for p in (tmp_path / 'all').iterdir()) == ['bad.png', 'good.png']
