"Benchmark tables in the README and docs are written from bench/results, and the check fails when one goes stale."
import importlib.util, json, shutil
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location('bench_tables', ROOT / '.ci' / 'bench_tables.py')
bench_tables = importlib.util.module_from_spec(spec); spec.loader.exec_module(bench_tables)


def project(tmp_path, names) -> Path:
    "A copy of bench/results and a notebook holding one block per name, written once."
    shutil.copytree(ROOT / 'bench' / 'results', tmp_path / 'bench' / 'results')
    (tmp_path / 'nbs').mkdir()
    text = '\n\n'.join(f'<!-- bench: {n} -->\n<!-- /bench -->' for n in names)
    nb = dict(cells=[dict(cell_type='markdown', id='a', metadata={}, source=[text])], metadata={}, nbformat=4,
              nbformat_minor=5)
    (tmp_path / 'nbs' / 'page.ipynb').write_text(json.dumps(nb))
    assert bench_tables.main([], tmp_path) == 0
    return tmp_path


def test_every_block_of_the_repository_is_current():
    assert bench_tables.main(['--check']) == 0


def test_a_changed_result_makes_the_check_fail(tmp_path):
    root = project(tmp_path, ['metric_memory', 'peers_train', 'long_context'])
    assert bench_tables.main(['--check'], root) == 0
    f = root / 'bench' / 'results' / 'metric_memory_cpu.json'
    d = json.loads(f.read_text()); d['rows'][-1]['chunked_mib'] += 50; f.write_text(json.dumps(d))
    assert bench_tables.main(['--check'], root) == 1                      # the table no longer says what the file does
    bench_tables.main([], root)
    page = (root / 'nbs' / 'page.ipynb').read_text()
    assert f"| {d['rows'][-1]['chunked_mib']:.0f} |" in page                # rewritten from the file
    (root / 'bench' / 'results' / 'long_context_cpu.txt').write_text('an edited result\n')
    assert bench_tables.main(['--check'], root) == 1                      # a text file is included as it is


def test_a_block_naming_no_results_file_is_refused(tmp_path):
    root = project(tmp_path, ['metric_memory'])
    (root / 'nbs' / 'page.ipynb').write_text((root / 'nbs' / 'page.ipynb').read_text().replace(
        'bench: metric_memory', 'bench: no_such_benchmark'))
    with pytest.raises(SystemExit, match="no_such_benchmark"): bench_tables.main(['--check'], root)


def test_every_block_the_docs_use_has_a_results_file():
    for name, render in bench_tables.RENDERERS.items():
        assert render(ROOT / 'bench' / 'results').strip(), name
