"""Issue 57 item 3: readers of saved results loop over what was saved, never over the live registry.

A mitigation registered after the saved runs has no rows in them; experiment 06 must read its saved results as they
are. The notebook's reading cells (every code cell but the re-run, which trains) run here with a late mitigation."""
import json
from pathlib import Path

import pytest

from sink_nb.run_configs import MITIGATIONS, list_configs, saved_mitigations

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / 'nbs' / 'experiments' / '06_mitigations.ipynb'
SAVED = ROOT / 'nbs' / 'experiments' / 'results' / 'mitigations_cpu.json'
LATE = 'zz-late-mitigation'


@pytest.fixture
def late_mitigation(monkeypatch):
    monkeypatch.setitem(MITIGATIONS, LATE, dict(attention='softmax1'))     # removed again after the test
    return LATE


def test_saved_mitigations_reads_the_saved_names(late_mitigation):
    rows = json.loads(SAVED.read_text())['rows']
    names = saved_mitigations(rows)
    assert late_mitigation not in names
    assert set(names) == {r['variant'].removeprefix('demo-') for r in rows}
    assert names[0] == 'softmax'


def test_a_saved_mitigation_no_longer_registered_is_still_read():
    assert saved_mitigations([dict(variant='demo-softmax'), dict(variant='demo-zz-gone')]) == ['softmax', 'zz-gone']


def _reading_cells() -> str:
    "Experiment 06's code cells, but the one that trains (the reduced re-run)."
    cells = json.loads(NOTEBOOK.read_text())['cells']
    code = [''.join(c['source']) for c in cells if c['cell_type'] == 'code']
    return '\n'.join(src for src in code if 'train_mitigations(' not in src)


def test_experiment_06_reads_its_saved_results_with_a_late_mitigation(late_mitigation, monkeypatch):
    "Before: its chart's panels came from the live registry, so a late entry had a panel with no runs."
    monkeypatch.chdir(ROOT)                                   # nbdev's get_config finds settings.ini from here
    shown = []
    ns = dict(display=shown.append)
    exec(compile(_reading_cells(), str(NOTEBOOK), 'exec'), ns)
    saved = {r['variant'].removeprefix('demo-') for r in ns['saved']}
    assert late_mitigation not in ns['order'] and set(ns['order']) == saved
    assert {f'{s}-{late_mitigation}' for s in ('demo', '60m', '1b')} <= set(list_configs())   # its configs, no file
    assert len(ns['claims'].table()) == len(ns['PLAN']['comparisons'])      # every claim of the saved plan decided
