"""bench/language_series.py refuses bad arguments with one line that names the argument and what it allows (exit 2,
no traceback), writes only into a folder of its own runs, and a start that fails leaves nothing behind."""
import json, os, subprocess, sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / 'bench' / 'language_series.py'


def series(*args, cwd=None, home=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_WAIT_POLICY='PASSIVE') | ({'HOME': str(home)} if home else {})
    return subprocess.run([sys.executable, str(BENCH), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def refused(r, *words, code=2) -> str:
    "The one error line of a refusal; it names each of `words`."
    assert r.returncode == code, (r.returncode, r.stdout[-1000:], r.stderr[-3000:])
    assert 'Traceback' not in r.stderr, r.stderr[-3000:]
    errors = [l for l in r.stderr.splitlines() if 'error:' in l]
    assert len(errors) == 1, r.stderr
    assert all(w in errors[0] for w in words), (words, errors[0])
    return errors[0]


@pytest.fixture
def corpus(tmp_path) -> Path:
    "A folder shaped as a built corpus (card, splits, tokenizer), enough for the up-front checks."
    c = tmp_path / 'corpus'
    (c / 'tokenizer').mkdir(parents=True)
    for f in ('train.jsonl', 'heldout.jsonl'): (c / f).write_text('{"text": "x"}\n')
    (c / 'card.json').write_text(json.dumps(dict(name='debian-docs', totals={}, packages=[])))
    return c


@pytest.mark.parametrize('args,words', [
    (['series', '--steps', '-5'], ['--steps', '1 or more']),
    (['series', '--steps', 'x'], ['--steps', '1 or more']),
    (['series', '--until', '0'], ['--until', '1 or more']),
    (['series', '--jobs', '0'], ['--jobs', '1 or more']),
])
def test_numbers_below_one_are_refused(tmp_path, args, words):
    refused(series(*args, '--out', tmp_path / 'runs'), *words)
    assert not (tmp_path / 'runs').exists()


def test_reading_commands_need_an_existing_folder(tmp_path, corpus):
    for what in ('status', 'summarize'):
        refused(series(what, '--out', tmp_path / 'nowhere', '--corpus', corpus, '--json', tmp_path / 's.json'),
                '--out', 'no folder')
    assert not (tmp_path / 'nowhere').exists()


def test_summarize_needs_a_corpus_and_a_json(tmp_path, corpus):
    (tmp_path / 'runs').mkdir()
    refused(series('summarize', '--out', tmp_path / 'runs', '--json', tmp_path / 's.json', home=tmp_path),
            '--corpus', 'card.json')
    refused(series('summarize', '--out', tmp_path / 'runs', '--corpus', tmp_path / 'missing', '--json', tmp_path / 's.json'),
            '--corpus', 'missing')
    refused(series('summarize', '--out', tmp_path / 'runs', '--corpus', corpus), '--json')
    assert list((tmp_path / 'runs').iterdir()) == []


def test_training_commands_refuse_a_missing_corpus_before_writing(tmp_path):
    for what in ('pilot', 'series', 'knobs'):
        refused(series(what, '--out', tmp_path / what, '--corpus', tmp_path / 'missing'), '--corpus', 'train.jsonl')
        refused(series(what, '--out', tmp_path / what, home=tmp_path), '--corpus', 'sink-nb corpus debian-docs')
        refused(series(what, '--out', tmp_path / what, '--prepared', tmp_path / 'missing'), '--prepared', 'meta.json')
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_out_must_be_a_folder_of_this_tools_runs(tmp_path, corpus):
    (tmp_path / 'file').write_text('mine')
    refused(series('pilot', '--out', tmp_path / 'file', '--corpus', corpus), '--out', 'is a file')
    assert (tmp_path / 'file').read_text() == 'mine'
    run = tmp_path / 'run'
    run.mkdir()
    (run / 'config.yaml').write_text('model: {}\n')
    refused(series('knobs', '--out', run, '--corpus', corpus), '--out', 'is a run folder')
    assert [p.name for p in run.iterdir()] == ['config.yaml']
    mine = tmp_path / 'mine'
    mine.mkdir()
    (mine / 'notes.txt').write_text('keep')
    refused(series('series', '--out', mine, '--corpus', corpus), '--out', 'notes.txt')
    assert [p.name for p in mine.iterdir()] == ['notes.txt']
    work = tmp_path / 'work'
    work.mkdir()
    refused(series('series', '--out', '', '--corpus', corpus, cwd=work), '--out', 'not a folder name')
    refused(series('series', '--out', ' ', '--corpus', corpus, cwd=work), '--out', 'not a folder name')
    refused(series('stages', '--out', tmp_path / 'a', '--knobs-out', '', '--corpus', corpus, cwd=work), '--knobs-out')
    assert list(work.iterdir()) == []


def test_a_start_that_fails_leaves_nothing_behind(tmp_path):
    "Shards that pass the up-front check but cannot be read: one error line, exit 1, no run skeleton, no --out."
    shards = tmp_path / 'shards'
    shards.mkdir()
    (shards / 'meta.json').write_text('{}')
    out = tmp_path / 'runs'
    r = series('series', '--out', out, '--prepared', shards, '--sizes', 'lang-4x128', '--steps', 2, '--jobs', 1)
    refused(r, 'lang-4x128 seed 0', code=1)
    assert not out.exists(), sorted(out.rglob('*'))
