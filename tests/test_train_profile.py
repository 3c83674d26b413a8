"bench/train_profile.py: its CPU smoke run writes the parts and the top ops; its split of CUDA kernels, on planted events."
import json, subprocess, sys

import pytest
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
from bench_env import record_problems                     # noqa: E402
from torch.autograd import DeviceType                     # noqa: E402
import train_profile                                      # noqa: E402


def run_profile(tmp_path, *extra):
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'train_profile.py'), '--T', '32', '--batch', '2',
                          '--steps', '2', '--out', str(tmp_path / 'p.txt'), '--json', str(tmp_path / 'p.json'), *extra],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads((tmp_path / 'p.json').read_text()), (tmp_path / 'p.txt').read_text()


def test_cpu_smoke_run(tmp_path):
    report, text = run_profile(tmp_path, '--loss-chunk', '24')
    assert record_problems(text) == []
    assert set(report['parts']) == set(train_profile.ORDER)
    assert report['step_s'] > 0 and abs(sum(report['parts'].values()) - report['busy_s']) < 1e-9
    assert all(report['parts'][p] > 0 for p in ('matmul', 'loss/logits', 'optimizer'))
    assert report['top'] and all(r['part'] in train_profile.ORDER for r in report['top'])
    assert report['args']['loss_chunk'] == 24 and 'in chunks of 24 tokens' in text
    for part in train_profile.ORDER: assert f' {part} ' in text


def test_refusals(capsys):
    for flags, says in ((['--steps', '0'], '--steps must be >= 1'), (['--device', 'cuda'], 'no CUDA device'),
                        (['--loss-chunk', '-3'], '--loss-chunk must be 0'), (['--skip', '0'], '--skip must be >= 1'),
                        (['--json', '/no/such/folder/p.json'], 'does not exist')):
        with pytest.raises(SystemExit): train_profile.parse(flags)
        assert says in capsys.readouterr().err, flags
    assert train_profile.parse(['--loss-chunk', '0']).loss_chunk == 0               # 0: the plain loss


def kernel(name, us):
    return SimpleNamespace(name=name, device_type=DeviceType.CUDA, device_time_total=us, cpu_parent=None, input_shapes=[])


def test_cuda_split_on_planted_events():
    "Kernels fall in parts by name; the GEMM an aten::mm over the vocabulary launched moves to loss/logits."
    events = [kernel('nvjet_tst_256x128_64x4_bf16', 300), kernel('sm90_xmma_gemm_bf16bf16', 100),
              kernel('pytorch_flash::flash_fwd_kernel', 200), kernel('triton_tem_fused_0', 50),
              kernel('triton_red_fused__log_softmax_exp_0', 40), kernel('multi_tensor_apply_kernel', 60),
              kernel('triton_poi_fused_add_mul_1', 10),
              SimpleNamespace(name='aten::mm', device_type=DeviceType.CPU, input_shapes=[[4096, 64], [64, 512]],
                              kernels=[SimpleNamespace(name='nvjet_tst_256x128_64x4_bf16', duration=120)], cpu_parent=None),
              SimpleNamespace(name='aten::mm', device_type=DeviceType.CPU, input_shapes=[[4096, 64], [64, 128]],
                              kernels=[SimpleNamespace(name='nvjet_tst_256x128_64x4_bf16', duration=80)], cpu_parent=None)]
    parts, top = train_profile.split(events, cuda=True, vocab=512)
    expect = {'matmul': 280e-6, 'attention': 250e-6, 'loss/logits': 160e-6, 'optimizer': 60e-6, 'other': 10e-6}
    assert all(abs(parts[p] - s) < 1e-12 for p, s in expect.items()), parts
    assert top[0] == ('nvjet_tst_256x128_64x4_bf16', 300e-6, 'matmul')


def test_a_caller_decides_on_the_cpu():
    "A CPU op inside AdamW's step is the optimiser's, whatever its own name."
    step = SimpleNamespace(name='Optimizer.step#AdamW.step', cpu_parent=None)
    op = SimpleNamespace(name='aten::mul', cpu_parent=step, input_shapes=[[8]])
    assert train_profile.part_of(op, 512) == 'optimizer'
    assert train_profile.part_of(SimpleNamespace(name='aten::mm', cpu_parent=None, input_shapes=[[8, 64], [64, 512]]),
                                 512) == 'loss/logits'


def test_mfu_counts_the_output_layer_not_the_input_table():
    "60M: 59.0M non-embedding weights (the paper's name) + the 38.7M output layer; the input table is a lookup."
    from gpu_checks import MFU_FORMULA, flops_per_token
    from sink_nb.model import SinkConfig
    cfg = SinkConfig.from_name('60M')
    assert flops_per_token(cfg, 2048) == 6 * (58_998_528 + 768 * 50_432) + 12 * 10 * 768 * 2048
    assert 'output layer' in MFU_FORMULA


def test_throughput_times_both_losses(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / 'bench' / 'train_throughput.py'), '--presets', 'tiny-cpu',
                          '--backends', 'sdpa', '--T', '32', '--steps', '3', '--loss-chunk', '0', '24',
                          '--json', str(tmp_path / 't.json')], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = json.loads((tmp_path / 't.json').read_text())['rows']
    assert [r['loss_chunk'] for r in rows] == [None, 24] and all(r['tokens_per_s'] > 0 for r in rows)
    assert 'FLOPs/token = 6 x (non-embedding weights + output layer' in out.stdout and 'chunk 24' in out.stdout
