"""Build the docs site offline: nbdev's notebook processing (what `nbdev_docs` does in `_proc/` before it calls Quarto)
followed by nbconvert's HTML exporter instead of Quarto, into `_docs/` with a sidebar in the order of `_quarto.yml`.
Notebooks are not executed: pages show their saved outputs (the nbdev convention), so charts are the inline SVG/PNG
outputs they were saved with. `python .ci/docs.py` builds `_docs/` (`--out DIR` elsewhere); `--check` builds into a temporary folder and exits 1
naming every page that failed to convert or lost chart outputs. `--nbdev-exec` executes exactly what nbdev does for
`show_doc` (also non-exported cells that mix imports with other code; by default only exported, import-only and
`show_doc` cells run). TeX in markdown (`$...$`, `$$...$$`) is converted to MathML at build time (latex2mathml), so
pages show rendered math with no script and nothing fetched."""
import ast, html, json, os, re, shutil, sys, tempfile, time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHART_MIMES = ('image/svg+xml', 'image/png', 'image/jpeg', 'image/gif')


# ---------- step 1: nbdev's processing (runs in worker processes, as nbdev's own `proc_nbs` does) ----------
def _procs(nbdev_exec:bool):
    "nbdev's default processors; unless `nbdev_exec`, its show_doc executor skips non-export cells mixing imports and code."
    from nbdev.processors import FilterDefaults, exec_show_docs, _is_showdoc
    class exec_exports_and_show_docs(exec_show_docs):
        def __call__(self, cell):
            if cell.cell_type == 'code' and not (cell.directives_.keys() & {'export', 'exports', 'exporti', 'exec_doc'}) and not _is_showdoc(cell):
                if not all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in cell.parsed_() or []): return
            return super().__call__(cell)
    class Filter(FilterDefaults):
        def base_procs(self):
            procs = super().base_procs()
            return procs if nbdev_exec else [exec_exports_and_show_docs if p is exec_show_docs else p for p in procs]
    return Filter()


def process(args) -> dict:
    "Run nbdev's processors on one notebook; the processed notebook as nbformat JSON, or the error."
    path, nbdev_exec = args
    os.chdir(ROOT); os.environ['IN_TEST'] = '1'       # as nbdev.serve_drv: `nbdev_export()` cells do nothing
    import warnings; warnings.simplefilter('ignore')
    from execnb.nbio import read_nb, nb2dict
    t = time.perf_counter()
    try:
        nb = read_nb(path)
        _procs(nbdev_exec)(nb)
        return dict(path=str(path), nb=json.dumps(nb2dict(nb)), seconds=time.perf_counter() - t)
    except Exception as e:
        cause = f' (caused by {type(e.__cause__).__name__}: {e.__cause__})' if e.__cause__ else ''
        return dict(path=str(path), error=f'{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ""}{cause}'[:600])


# ---------- step 2: Quarto's part, done with nbconvert ----------
def _directives(source:str) -> tuple[dict, str]:
    "Quarto/nbdev `#| key: value` options of a cell, and the source without them."
    opts, body = {}, []
    for line in source.splitlines():
        if line.startswith('#|'):
            key, _, value = line[2:].strip().partition(':')
            if key.strip(): opts[key.strip()] = value.strip().lower() or 'true'
        else: body.append(line)
    return opts, '\n'.join(body).strip('\n')


_QLINK = re.compile(r'\[([^\]]*)\]\(([^)\s]+)\)\{([^}]*)\}')   # [text](url){target="_blank" style="..."}

def _clean_md(text:str, link) -> str:
    "Quarto-only markdown made plain: link attributes become HTML anchors; links are rewritten by `link`."
    text = _QLINK.sub(lambda m: '' if link(m[2]) is None else f'<a href="{link(m[2])}" {m[3]}>{m[1]}</a>', text)
    return re.sub(r'\]\(([^)\s]+)\)', lambda m: f']({link(m[1]) or m[1]})', text)


_CODE = re.compile(r'(```.*?```|~~~.*?~~~|`[^`\n]*`)', re.S)                    # code spans and fences keep their dollars
_DISPLAY = re.compile(r'\$\$(.+?)\$\$', re.S)
_INLINE = re.compile(r'(?<![\\$\w])\$(?=\S)([^$\n]+?)(?<=\S)\$(?![\w$])')   # $x$ but not "costs $5 and $6"

def _math(text:str, store:list) -> str:
    "Replace TeX in markdown by placeholders; `store` gets the MathML each placeholder stands for."
    from latex2mathml.converter import convert
    def put(tex:str, display:str) -> str:
        store.append(convert(tex.strip(), display=display)); return f'SINKNBMATH{len(store) - 1}X'
    parts = _CODE.split(text)
    for i in range(0, len(parts), 2):                                     # even parts are prose, odd ones code
        parts[i] = _INLINE.sub(lambda m: put(m[1], 'inline'), _DISPLAY.sub(lambda m: put(m[1], 'block'), parts[i]))
    return ''.join(parts)


def _unmath(page_html:str, store:list) -> str:
    "Put the MathML back where `_math` left placeholders (a display formula alone in a paragraph loses the <p>)."
    page_html = re.sub(r'<p>\s*(SINKNBMATH\d+X)\s*</p>', r'\1', page_html)
    return re.sub(r'SINKNBMATH(\d+)X', lambda m: store[int(m[1])], page_html)


def _rel(target:str, page:str) -> str:
    "Relative link from page (path under the site) to target (path under the site)."
    return os.path.relpath(target, os.path.dirname(page) or '.').replace(os.sep, '/')


def _linker(page:str, pages:dict, site_url:str, source_url:str=''):
    "Rewrite links to notebooks and to the published site so they work offline; None for show_doc's source links."
    def link(url:str) -> str|None:
        base, hash_, frag = url.partition('#')
        if source_url and base.startswith(source_url + '/blob/'): return None     # settings.ini's git_url: not published
        if site_url and base.startswith(site_url): return _rel(base[len(site_url):].lstrip('/') or 'index.html', page) + hash_ + frag
        if base.endswith('.ipynb') and '://' not in base:
            src = os.path.normpath(os.path.join(os.path.dirname(pages[page]['src']), base)).replace(os.sep, '/')
            hit = next((p for p, v in pages.items() if v['src'] == src), None)
            if hit: return _rel(hit, page) + hash_ + frag
        return url
    return link


def _prepare(nbj:dict, page:str, pages:dict, site_url:str, maths:list, source_url:str=''):
    "Apply the cell options Quarto honours, clean Quarto-only markdown, set TeX aside in `maths`; returns (notebook, front matter)."
    import nbformat, yaml
    nb = nbformat.reads(json.dumps(nbj), as_version=4)
    fm, cells, link = {}, [], _linker(page, pages, site_url, source_url)
    for cell in nb.cells:
        if cell.cell_type == 'raw' and cell.source.startswith('---'):
            fm.update(yaml.safe_load(cell.source.strip().strip('-')) or {}); continue
        if cell.cell_type == 'markdown':
            if cell.source.strip().startswith('<!-- WARNING: THIS FILE WAS AUTOGENERATED'): continue
            cell.source = _math(_clean_md(cell.source, link), maths); cells.append(cell); continue
        if cell.cell_type != 'code': continue
        opts, cell.source = _directives(cell.source)
        if opts.get('include') == 'false': continue
        tags = cell.metadata.setdefault('tags', [])
        if opts.get('echo') == 'false' or not cell.source.strip(): tags.append('remove_input')
        if opts.get('output') == 'false': tags.append('remove_output')
        for out in cell.get('outputs', []):
            data = out.get('data', {})
            if 'text/markdown' in data: data['text/markdown'] = _math(_clean_md(data['text/markdown'], link), maths)
        if cell.source.strip() or cell.get('outputs'): cells.append(cell)
    nb.cells = cells
    return nb, fm


def _exporter():
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor
    from traitlets.config import Config
    c = Config()
    c.TagRemovePreprocessor.remove_input_tags = {'remove_input'}
    c.TagRemovePreprocessor.remove_all_outputs_tags = {'remove_output'}
    c.TagRemovePreprocessor.enabled = True
    ex = HTMLExporter(config=c, template_name='basic', exclude_input_prompt=True, exclude_output_prompt=True)
    ex.register_preprocessor(TagRemovePreprocessor(config=c), enabled=True)
    return ex


def count_charts(nbj:dict) -> int:
    "Chart outputs (SVG/PNG/JPEG/GIF images, HTML holding an <svg> or <img>) in cells a reader sees."
    n = 0
    for cell in nbj['cells']:
        if cell['cell_type'] != 'code': continue
        src = ''.join(cell['source']) if isinstance(cell['source'], list) else cell['source']
        opts, _ = _directives(src)
        if 'hide' in opts or opts.get('include') == 'false' or opts.get('output') == 'false': continue
        for out in cell.get('outputs', []):
            data = out.get('data', {})
            htm = ''.join(data.get('text/html', ''))
            if any(m in data for m in CHART_MIMES) or '<svg' in htm or '<img' in htm: n += 1
    return n


def html_charts(page_html:str) -> int:
    main = page_html.split('<main', 1)[-1]
    return len(re.findall(r'<svg[\s>]', main)) + len(re.findall(r'<img[\s>]', main))


# ---------- the sidebar, in the order of _quarto.yml ----------
def sidebar_order(nbs:Path, notebooks:list[Path]) -> list:
    "[(section or None, [notebook path, ...]), ...] from _quarto.yml's sidebar; notebooks it misses go last, under 'More'."
    import yaml
    qy = nbs / '_quarto.yml'
    spec = ((yaml.safe_load(qy.read_text()) or {}).get('website', {}).get('sidebar', {}) if qy.exists() else {})
    contents = spec.get('contents', []) if isinstance(spec, dict) else []
    seen, out = set(), []
    def items(entries):
        res = []
        for e in entries if isinstance(entries, list) else [entries]:
            if isinstance(e, dict) and 'auto' in e: files = sorted(nbs.glob(e['auto']))
            elif isinstance(e, dict) and 'href' in e: files = [nbs / e['href']]
            elif isinstance(e, str): files = sorted(nbs.glob(e)) if '*' in e else [nbs / e]
            else: files = []
            res += [f for f in files if f.suffix == '.ipynb' and f in notebooks and f not in seen]
            seen.update(res)
        return res
    for e in contents:
        if isinstance(e, dict) and 'section' in e: out.append((e['section'], items(e.get('contents', []))))
        else: out.append((None, items(e)))
    rest = [p for p in notebooks if p not in seen]
    if rest: out.append(('More', rest))
    return out


CSS = """
*{box-sizing:border-box} body{margin:0;font:16px/1.55 -apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:#212529}
a{color:#2780e3;text-decoration:none} a:hover{text-decoration:underline}
nav.sidebar{position:fixed;top:0;left:0;bottom:0;width:250px;overflow-y:auto;padding:1.2rem 1rem;background:#f7f7f9;border-right:1px solid #e3e3e3;font-size:.92rem}
nav.sidebar .site{font-size:1.25rem;font-weight:600;margin-bottom:.2rem} nav.sidebar .site a{color:#212529}
nav.sidebar .tagline{color:#6c757d;font-size:.8rem;margin-bottom:1rem}
nav.sidebar .section{margin:1rem 0 .3rem;font-weight:600;color:#495057;text-transform:uppercase;font-size:.75rem;letter-spacing:.05em}
nav.sidebar ul{list-style:none;margin:0;padding:0} nav.sidebar li{margin:.15rem 0} nav.sidebar li a{display:block;padding:.1rem .4rem;border-radius:4px;color:#343a40}
nav.sidebar li a.active{background:#2780e3;color:#fff}
main{margin-left:250px;padding:1.5rem 2.5rem 4rem;max-width:1150px}
header.title h1{margin:.2rem 0 .4rem;font-size:2.2rem} header.title p.description{color:#6c757d;font-size:1.1rem;margin-top:0}
h2{margin-top:2rem;border-bottom:1px solid #eee;padding-bottom:.2rem} h3{margin-top:1.5rem}
code{background:#f3f3f3;padding:.05rem .25rem;border-radius:3px;font-size:.9em}
pre{overflow-x:auto;font-size:.85rem;line-height:1.4;margin:0} pre code{background:none;padding:0}
.cell{margin:.7rem 0} .input_area .highlight{background:#f8f8f8;border:1px solid #e1e1e8;border-radius:4px;padding:.5rem .7rem}
.rendered_html .highlight,.output_markdown .highlight{background:#f8f8f8;border-radius:4px;padding:.4rem .6rem}
.output_area{margin:.3rem 0 .3rem .8rem;overflow-x:auto} .output_text pre{padding:.2rem .6rem;border-left:2px solid lightsalmon}
.output_stderr pre{border-left-color:#d9534f;color:#8a1f1b;background:#fdf3f3}
.anchor-link{visibility:hidden;margin-left:.3rem;color:#aaa} h2:hover .anchor-link,h3:hover .anchor-link{visibility:visible}
table{border-collapse:collapse;margin:.5rem 0;font-size:.88rem} th,td{border-bottom:1px solid #ddd;padding:.25rem .6rem;text-align:right} th{background:#f5f5f5} td:first-child,th:first-child{text-align:left}
.output_markdown td,.output_markdown th,.text_cell_render td,.text_cell_render th{text-align:left}
.output_svg svg,.output_png img,.output_jpeg img{max-width:100%;height:auto}
blockquote{margin:.5rem 0;padding:.2rem 1rem;border-left:4px solid #ddd;color:#555}
footer{margin-top:3rem;color:#999;font-size:.8rem}
"""


def _page(title:str, desc:str, body:str, page:str, nav:list, pages:dict, site:dict) -> str:
    rel = lambda p: _rel(p, page)
    side = [f'<div class="site"><a href="{rel("index.html")}">{html.escape(site["title"])}</a></div>',
            f'<div class="tagline">{html.escape(site.get("description", ""))}</div>']
    for section, items in nav:
        if section: side.append(f'<div class="section">{html.escape(section)}</div>')
        side.append('<ul>' + ''.join(f'<li><a href="{rel(p)}"{" class=active" if p == page else ""}>{html.escape(pages[p]["title"])}</a></li>'
                                     for p in items) + '</ul>')
    desc = re.sub(r'`([^`]+)`', r'<code>\1</code>', html.escape(desc))      # front matter's `code` as in Quarto's subtitle
    head = f'<header class="title"><h1>{html.escape(title)}</h1>' + (f'<p class="description">{desc}</p>' if desc else '') + '</header>'
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<title>{html.escape(title)} – {html.escape(site["title"])}</title>\n<link rel="stylesheet" href="{rel("site.css")}">'
            + (f'<link rel="stylesheet" href="{rel("styles.css")}">' if site.get('styles') else '') +
            f'</head>\n<body>\n<nav class="sidebar">{"".join(side)}</nav>\n<main>\n{head}\n{body}\n'
            f'<footer>Built offline from {html.escape(pages[page]["src"])} by .ci/docs.py (nbdev processing + nbconvert).</footer>\n</main>\n</body></html>\n')


def build(out:Path, nbdev_exec:bool=False, workers:int=2) -> list[str]:
    "Build the site into `out`; returns the problems found (empty when every page converted with its charts)."
    from nbdev.config import get_config
    from nbdev.doclinks import nbglob
    from pygments.formatters import HtmlFormatter
    import yaml
    cfg = get_config(); nbs = Path(cfg.nbs_path)
    notebooks = sorted(Path(p).resolve() for p in nbglob(nbs))
    sys.modules['_ci_docs'] = sys.modules[process.__module__]   # importing nbdev swaps sys.modules['__main__'] (IPython)
    process.__module__ = '_ci_docs'                               # so the forked workers find `process` by this name
    ctx = get_context('fork')           # workers reused across notebooks, as nbdev's own proc_nbs does
    with ProcessPoolExecutor(max_workers=max(1, min(workers, len(notebooks))), mp_context=ctx) as ex:
        results = list(ex.map(process, [(p, nbdev_exec) for p in notebooks]))
    problems, done = [], {}
    for r in results:
        rel_src = Path(r['path']).relative_to(nbs.resolve()).as_posix()
        if 'error' in r: problems.append(f'{rel_src}: nbdev processing failed: {r["error"]}'); continue
        nbj = json.loads(r['nb'])
        fm_cell = next((c for c in nbj['cells'] if c['cell_type'] == 'raw'), None)
        fm = yaml.safe_load(''.join(fm_cell['source']).strip().strip('-')) if fm_cell else {}
        page = (Path(rel_src).parent / fm.get('output-file', Path(rel_src).stem + '.html')).as_posix()
        done[page] = dict(src=rel_src, title=str(fm.get('title', Path(rel_src).stem)), nb=nbj, path=Path(r['path']))
    qy = yaml.safe_load((nbs / '_quarto.yml').read_text()) if (nbs / '_quarto.yml').exists() else {}
    site = dict(title=qy.get('website', {}).get('title', cfg.get('title', cfg.lib_name)), description=qy.get('website', {}).get('description', cfg.get('description', '')),
                styles=(nbs / 'styles.css').exists())
    site_url = (cfg.get('doc_host', '') + cfg.get('doc_baseurl', '')).rstrip('/')
    by_path = {v['path']: p for p, v in done.items()}
    nav = [(s, [by_path[f] for f in files if f in by_path]) for s, files in sidebar_order(nbs, notebooks)]
    out.mkdir(parents=True, exist_ok=True)
    (out / 'site.css').write_text(CSS + HtmlFormatter(style='default').get_style_defs('.highlight'))
    if site['styles']: shutil.copy(nbs / 'styles.css', out / 'styles.css')
    if (nbs / 'images').is_dir(): shutil.copytree(nbs / 'images', out / 'images', dirs_exist_ok=True)  # pages' figures
    exporter = _exporter()
    for page, v in done.items():
        try:
            maths = []
            nb, fm = _prepare(v['nb'], page, done, site_url, maths, cfg.get('git_url', '').rstrip('/'))
            body, _ = exporter.from_notebook_node(nb)
            body = _unmath(body, maths)
            text = _page(v['title'], str(fm.get('description', '') or ''), body, page, nav, done, site)
        except Exception as e:
            problems.append(f'{v["src"]}: conversion to HTML failed: {type(e).__name__}: {e}'); continue
        dest = out / page; dest.parent.mkdir(parents=True, exist_ok=True); dest.write_text(text, encoding='utf-8')
        want, got = count_charts(json.loads(v['path'].read_text())), html_charts(text)
        if got < want: problems.append(f'{v["src"]}: {page} shows {got} of its {want} chart outputs')
    if 'index.html' not in done: problems.append('no index.html: nbs/index.ipynb is missing or failed')
    return problems


def main(argv:list[str]) -> int:
    check, nbdev_exec = '--check' in argv, '--nbdev-exec' in argv
    dest = Path(argv[argv.index('--out') + 1]).resolve() if '--out' in argv else ROOT / '_docs'   # --out DIR: build there
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / '_docs' if check else dest
        if not check and out.exists() and any(out.iterdir()):
            stray = [f.name for f in out.iterdir() if f.suffix not in ('.html', '.css') and f.name != 'experiments']
            if stray or not (out / 'site.css').exists():      # never delete a folder this script did not write
                print(f'docs: {out} holds files that are not an earlier docs build ({", ".join(stray[:5]) or "no site.css"}); '
                      'give --out an empty or new folder'); return 2
            shutil.rmtree(out)
        problems = build(out, nbdev_exec)
        pages = sorted(p.relative_to(out).as_posix() for p in out.rglob('*.html'))
        print(f'docs: {len(pages)} pages{"" if check else " in " + str(out)} in {time.perf_counter() - t:.0f} s')
    for p in problems: print('FAILED', p)
    return 1 if problems else 0


if __name__ == '__main__': sys.exit(main(sys.argv[1:]))
