"""House rules that CI can check: short lines and functions in the package, one statement a line, no unused imports, no
module over 600 lines, chapters whose exported cells are followed by examples, and a CLI that answers --help without importing torch."""
import ast, io, json, re, statistics, subprocess, sys, tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted(p for p in (ROOT / 'sink_nb').glob('*.py') if p.name not in ('_modidx.py', '__init__.py'))
CHAPTERS = sorted((ROOT / 'nbs').glob('[0-9][0-9]_*.ipynb'))


def functions(path):
    tree = ast.parse(path.read_text())
    return [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


@pytest.mark.parametrize('path', MODULES, ids=lambda p: p.name)
def test_module_lines_and_functions_are_short(path):
    lines = path.read_text().splitlines()
    long = [i + 1 for i, l in enumerate(lines) if len(l) > 120 and not l.startswith('__all__')]   # nbdev writes __all__
    assert not long, f'{path.name}: lines over 120 characters at {long[:10]}'
    assert len(lines) <= 600, f'{path.name} has {len(lines)} lines; split it by concern (the house limit is 600)'
    big = [(name, n) for name, n in functions(path) if n > 40]
    assert not big, f'{path.name}: functions over 40 lines: {big}'


def test_one_statement_a_line():
    "No `;` joins two statements in the package (tokenized: a `;` in a string or a comment is no join)."
    joins = [f'{path.name}:{t.start[0]}' for path in MODULES
             for t in tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
             if t.type == tokenize.OP and t.string == ';']
    assert not joins, f'`;` joins statements at {joins[:20]}: one statement a line (in the notebooks, then nbdev_export)'


def test_no_unused_imports():
    pyflakes = pytest.importorskip('pyflakes.api')
    from pyflakes.reporter import Reporter
    import io
    out = io.StringIO()
    for path in MODULES: pyflakes.checkPath(str(path), Reporter(out, out))
    unused = [l for l in out.getvalue().splitlines() if 'imported but unused' in l]
    assert not unused, '\n'.join(unused)


def test_no_private_names_cross_modules():
    "One public layer per concern: no module imports a `_private` name from another sink_nb module."
    crossing = []
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or '').startswith('sink_nb')):
                crossing += [f'{path.name}: {a.name} from {node.module}' for a in node.names
                             if a.name.startswith('_') and not a.name.endswith('__')]   # __version__ is public
    assert not crossing, crossing


def chapter_cells(path):
    cells = json.loads(path.read_text())['cells']
    return [(''.join(c['source']), c['cell_type']) for c in cells]


def is_export(src): return src.lstrip().startswith(('#| export', '#| exporti', '#|export'))


@pytest.mark.parametrize('path', CHAPTERS, ids=lambda p: p.stem)
def test_chapters_show_each_export_in_use(path):
    "At least 70 % of exported cells are followed at once by a code cell that uses them (fastcore's 01_basics: 76 %)."
    cells = chapter_cells(path)
    exports = [i for i, (src, kind) in enumerate(cells) if kind == 'code' and is_export(src) and 'import' not in src.split('\n')[1]]
    if not exports: return
    def shows(i):
        if i + 1 >= len(cells): return False
        src, kind = cells[i + 1]
        return kind == 'code' and not is_export(src) and not src.lstrip().startswith('#| hide\nimport nbdev')
    share = sum(map(shows, exports)) / len(exports)
    sizes = [len(cells[i][0].splitlines()) - 1 for i in exports]
    assert share >= 0.7, f'{path.name}: only {share:.0%} of exported cells are followed at once by an example or test'
    assert statistics.median(sizes) <= 16, f'{path.name}: median exported cell has {statistics.median(sizes)} lines'


def test_cli_help_imports_no_torch():
    code = 'import sys, sink_nb.cli; sink_nb.cli._parser().format_help(); print(sorted(m for m in ("torch", "pandas", "transformers") if m in sys.modules))'
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == '[]', out.stdout


def test_a_toy_runs_commands_import_no_transformers():
    "compare, study and trajectory on a SinkLM run: transformers (about 3 s an import) only where a model needs it."
    code = ('import sys, sink_nb.run_summaries, sink_nb.studies, sink_nb.trajectory; '
            'print(sorted(m for m in ("pandas", "transformers") if m in sys.modules))')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == '[]', out.stdout


NOTEBOOKS = sorted((ROOT / 'nbs').rglob('*.ipynb'))
NOTEBOOK_MAX_BYTES = 1_000_000


@pytest.mark.parametrize('path', NOTEBOOKS, ids=lambda p: p.relative_to(ROOT / 'nbs').as_posix())
def test_saved_notebooks_stay_small(path):
    "No widget state saved (each JupyterChart's would carry a 0.9 MB JavaScript bundle) and under 1 MB: .ci/refresh."
    nb = json.loads(path.read_text())
    assert 'widgets' not in nb.get('metadata', {}), f'{path.name} holds saved widget state: re-run it with .ci/refresh'
    assert path.stat().st_size < NOTEBOOK_MAX_BYTES, f'{path.name} is {path.stat().st_size:,} bytes (limit {NOTEBOOK_MAX_BYTES:,})'


def test_chapters_are_numbered_in_import_order():
    "One number per chapter, and a chapter (its exports and its tests) imports only from lower-numbered chapters."
    numbers, imports = {}, {}
    for path in CHAPTERS:
        source = '\n'.join(src for src, kind in chapter_cells(path) if kind == 'code')
        module = re.search(r'#\| default_exp (\w+)', source).group(1)
        numbers[module] = int(path.name[:2])
        imports[module] = set(re.findall(r'(?:from|import) sink_nb\.(\w+)', source)) - {module}
    assert len(set(numbers.values())) == len(numbers), f'two chapters share a number: {sorted(numbers.items())}'
    forward = {m: sorted(d for d in deps if d in numbers and numbers[d] > numbers[m]) for m, deps in imports.items()}
    assert not any(forward.values()), f'chapters importing from later chapters: { {m: f for m, f in forward.items() if f} }'
