"""Every CPU results file in bench/results/ says where it ran: the machine, the versions and the load before and after
(`bench/bench_env.py`). The GPU files of 27 November (bench/results/gpu/) predate this rule and cannot be re-run without
a GPU; the scripts that wrote them now write the same lines."""
import json, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from bench_env import Load, Output, record_problems, spread, spread_text   # noqa: E402

RESULTS = ROOT / 'bench' / 'results'


@pytest.mark.parametrize('path', sorted(RESULTS.glob('*_cpu.txt')), ids=lambda p: p.name)
def test_each_text_file_names_machine_versions_and_load(path):
    text = path.read_text()
    assert record_problems(text) == [], path.name
    assert text.startswith('$ python bench/'), f"{path.name} does not start with its command"


@pytest.mark.parametrize('path', sorted(RESULTS.glob('*_cpu.json')), ids=lambda p: p.name)
def test_each_json_file_records_them_too(path):
    found = json.loads(path.read_text())
    assert {'machine', 'versions', 'load'} <= set(found), path.name
    assert len(found['load']['before']) == 3 and len(found['load']['after']) == 3


def test_a_file_without_its_load_is_caught():
    load = Load().done()
    out = Output('planted.py', ['--x', '1'])
    out.say('a table')
    text = out.write(None)
    assert record_problems(text) == []
    assert text.splitlines()[0] == '$ python bench/planted.py --x 1'
    planted = '\n'.join(l for l in text.splitlines() if not l.startswith('load average'))
    assert record_problems(planted) == ["no line starting 'load average (1/5/15 min): before'"]
    assert 'quiet before' in load.line() or 'NOT quiet' in load.line()


def test_the_load_after_must_be_taken():
    with pytest.raises(RuntimeError, match='Load.done'): Load().line()


def test_a_ratio_is_a_median_with_its_range():
    assert spread([1.2, 0.9, 1.0]) == dict(median=1.0, min=0.9, max=1.2, n=3)
    assert spread_text([1.2, 0.9, 1.0]) == '1.000x (0.900-1.200, n=3)'
    with pytest.raises(ValueError): spread([])
