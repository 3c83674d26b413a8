"""A Ctrl-C at any moment leaves every model as it was: a real SIGINT is sent at the k-th Python function entry of a
call (sink_nb's, transformers', torch's: the points where CPython handles a pending signal), for every k, through each
context that edits a model in place (hooks, the attention implementation, rounded weights, eval
mode); afterwards every parameter and buffer, every hook list, every module's mode and the attention implementation are
compared with the originals, as is torch's grad mode, and a plain forward pass must give the same logits as before."""
import signal, sys

import pytest
import torch
import transformers

from sink_nb import hf, quant
from sink_nb.intervene import intervene
from sink_nb.model import SinkConfig, SinkLM, measure_model

# A Ctrl-C that lands while Python closes a generator is reported as "Exception ignored" and dropped, by Python.
pytestmark = pytest.mark.filterwarnings('ignore::pytest.PytestUnraisableExceptionWarning')


def interrupt_at_call(k:int, call) -> str|None:
    "Run `call()` with a real SIGINT sent as the k-th Python function starts; where that was (None: no k-th call)."
    count, sent = 0, None
    def tracer(frame, event, arg):                  # a function's start: where CPython runs a pending signal's handler
        nonlocal count, sent
        if event == 'call' and not sent:
            count += 1
            if count == k:
                sent = ' < '.join(f'{f.f_code.co_name}:{f.f_lineno}' for f in _callers(frame, 6))
                signal.raise_signal(signal.SIGINT)                           # handled as Python handles a Ctrl-C
        return None
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.settrace(tracer)
    try: call()
    except KeyboardInterrupt: pass
    finally: sys.settrace(None); signal.signal(signal.SIGINT, previous)
    return sent


def _callers(frame, n:int):
    while frame is not None and n: yield frame; frame, n = frame.f_back, n - 1


def snapshot(model) -> dict:
    "Everything an edit could leave behind."
    return dict(tensors={n: t.detach().clone() for n, t in model.state_dict(keep_vars=True).items()},
                modes=[m.training for m in model.modules()],
                hooks=[(len(m._forward_hooks), len(m._forward_pre_hooks)) for m in model.modules()],
                attn=getattr(getattr(model, 'config', None), '_attn_implementation', None),
                grad=torch.is_grad_enabled(), inference=torch.is_inference_mode_enabled())


def assert_unchanged(model, before:dict, forward, logits, where:str):
    now = snapshot(model)
    changed = [n for n, t in before['tensors'].items() if not torch.equal(now['tensors'][n], t)]
    assert not changed, f"{where}: tensors changed: {changed[:3]}"
    for what in ('modes', 'hooks', 'attn', 'grad', 'inference'):
        assert now[what] == before[what], f"{where}: {what} changed"
    with torch.no_grad(): assert torch.equal(forward(), logits), f"{where}: a plain forward differs"


def every_call(model, call, forward, at_least:int, stride:int=1):
    "Interrupt `call` at each function start in turn (or every `stride`-th); the model is checked after each."
    call()              # once whole first: transformers installs its own output-capturing hooks for good on first use
    before = snapshot(model)
    with torch.no_grad(): logits = forward()
    k = 1
    while where := interrupt_at_call(k, call):
        assert_unchanged(model, before, forward, logits, f"interrupted at call {k} ({where})")
        k += stride
    assert k > at_least, f"only {k - 1} calls were interrupted"            # the trace did reach the code
    assert_unchanged(model, before, forward, logits, 'after a whole call')


@pytest.fixture(scope='module')
def llama():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, vocab_size=128, max_position_embeddings=64)
    model = transformers.LlamaForCausalLM(config)
    model.train(); model.model.layers[1].eval()                  # modes a user set: each must come back as it was
    return model


@pytest.fixture(scope='module')
def ids(): return torch.randint(0, 128, (2, 16), generator=torch.Generator().manual_seed(0))


def test_run_with_cache_on_llama(llama, ids):
    forward = lambda: llama(input_ids=ids, use_cache=False).logits
    every_call(llama, lambda: hf.run_with_cache(llama, ids, route='qk'), forward, at_least=50)
    every_call(llama, lambda: hf.run_with_cache(llama, ids, route='eager'), forward, at_least=20)


def test_quantised_llama(llama, ids):                         # 'all': rounded weights, activation and KV hooks
    forward = lambda: llama(input_ids=ids, use_cache=False).logits
    every_call(llama, lambda: quant.quantisation_study(llama, ids, 4, 'tensor', 1, 'all'), forward, at_least=30)


def test_sinklm_measure_and_intervene():
    torch.manual_seed(0)
    model = SinkLM(SinkConfig.from_name('tiny-cpu')); model.train()
    x = torch.randint(0, 512, (2, 16), generator=torch.Generator().manual_seed(1))
    forward = lambda: model(x)
    every_call(model, lambda: measure_model(model, x), forward, at_least=30)
    # every 3rd call: intervene's set-ups (SinkLM.hooks, eval_mode) are measure_model's, swept at every call just above
    every_call(model, lambda: intervene(model, x, [(0, 1)], kind='mask_sink', progress=False), forward, at_least=30,
               stride=3)


# A package corpus's read step: worker processes unpack and read .debs; a Ctrl-C (to the whole process group, as a
# terminal sends it, or to the main process alone) or a SIGTERM must end the build at once and leave nothing behind.
BUILD = """
import sys
from pathlib import Path
from sink_nb.package_corpora import PACKAGE_CORPORA, PackageCorpus, build_package_corpus
tmp, names = Path(sys.argv[1]), sys.argv[2:]
PACKAGE_CORPORA['slow-docs'] = PackageCorpus(tuple(names), 'packages that take seconds each to read', heldout_per_mille=500)
build_package_corpus('slow-docs', tmp / 'corpus', cache=tmp / 'debs', num_proc=2, progress=False)
"""


def fake_deb(cache, package:str, files:dict):
    "A real .deb built with dpkg-deb -b holding `files` (path under the root -> bytes)."
    import subprocess, tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel, data in {**files, 'DEBIAN/control': f'Package: {package}\nVersion: 1.0\nArchitecture: all\n'
                          'Maintainer: t <t@t>\nDescription: test\n'.encode()}.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        cache.mkdir(parents=True, exist_ok=True)
        subprocess.run(['dpkg-deb', '--root-owner-group', '-b', str(root), str(cache / f'{package}_1.0_all.deb')],
                       check=True, capture_output=True)


@pytest.fixture(scope='module')
def slow_debs(tmp_path_factory):
    "Eight packages of a 25 MB dictd dictionary each: seconds of reading each, 30 s or more in all on two processes."
    import gzip, shutil
    if shutil.which('dpkg-deb') is None: pytest.skip('needs dpkg-deb')
    cache = tmp_path_factory.mktemp('slow') / 'debs'
    words = ' '.join(['the first token of the sequence draws the attention of the head'] * 6)
    data = gzip.compress('\n\n'.join(f'Entry {i}\n  {words} in entry {i}.' for i in range(60_000)).encode(), 1)
    names = [f'slow{i}-doc' for i in range(8)]
    for name in names: fake_deb(cache, name, {'usr/share/dictd/slow.dict.dz': data})
    return cache, names


@pytest.mark.parametrize('sig,to', [(signal.SIGINT, 'group'), (signal.SIGINT, 'main'), (signal.SIGTERM, 'main')])
def test_a_package_corpus_read_ends_at_once_and_leaves_nothing(slow_debs, tmp_path, sig, to):
    import os, shutil, subprocess, time
    cache, names = slow_debs
    shutil.copytree(cache, tmp_path / 'debs')
    (tmp_path / 'tmp').mkdir()
    env = os.environ | dict(OMP_WAIT_POLICY='PASSIVE', TMPDIR=str(tmp_path / 'tmp'))
    proc = subprocess.Popen([sys.executable, '-c', BUILD, str(tmp_path), *names], env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not list(tmp_path.glob('.corpus.tmp-*/train.jsonl')):          # the read step has begun
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.05)
    time.sleep(1.5)                                                     # every worker inside a package
    sent = time.time()
    os.killpg(proc.pid, sig) if to == 'group' else os.kill(proc.pid, sig)
    try: _, err = proc.communicate(timeout=120)
    finally: proc.kill()
    took = time.time() - sent
    assert proc.returncode != 0, err[-2000:]
    assert took < 3, f'{took:.1f} s from the signal to the end'
    assert sorted(p.name for p in tmp_path.iterdir()) == ['debs', 'tmp'], sorted(tmp_path.iterdir())
    assert list((tmp_path / 'tmp').iterdir()) == [], 'a worker left an unpacked package'
    assert 'PoolWorker' not in err and 'Process ' not in err, err[-3000:]   # no worker's traceback
