"""Issue 57 item 4: the mitigation configs (demo, 60m, 1b) are built from their `run_configs.MITIGATIONS` entry.

`SHIPPED` holds, for each config that shipped as a hand-written YAML file, what those files resolved to, taken against
its size's base config (demo-softmax, 60m-default, 1b-softmax, still files): the SinkConfig fields that differ, the
paper dict without `sources`, and the sources it adds to the base's. Each name must keep resolving to exactly that."""
import dataclasses

import pytest

from sink_nb.run_configs import MITIGATIONS, list_configs, load_run_config, mitigation_config

SHIPPED = {'demo-softmax1': ({'name': 'demo-softmax1', 'attention': 'softmax1'},
                   {'sink_rate': None,
                    'note': 'CPU mitigation comparison (experiments/06_mitigations)',
                    'description': 'CPU demo task with softmax + 1 (off-by-one): a fixed zero logit in every row',
                    'scaled': False},
                   {'knob': 'Miller 2023 "Attention is off by one"; softpick Table 3: 16.36 % at ε 0.3'}),
 '60m-softmax1': ({'attention': 'softmax1'},
                  {'sink_rate': None,
                   'note': 'not in the paper; softpick Table 3 (their model, 10k steps): 16.36 %',
                   'description': '60M with softmax + 1 (off-by-one): a fixed zero logit in every row',
                   'scaled': False},
                  {'knob': 'Miller 2023 "Attention is off by one"; softpick Table 3: 16.36 % at ε 0.3'}),
 '1b-softmax1': ({'attention': 'softmax1'},
                 {'sink_rate': None,
                  'note': 'not measured by the paper at 1B',
                  'description': '1B with softmax + 1 (off-by-one): a fixed zero logit in every row',
                  'scaled': False},
                 {'knob': 'Miller 2023 "Attention is off by one"; softpick Table 3: 16.36 % at ε 0.3'}),
 'demo-sink-logit': ({'name': 'demo-sink-logit', 'sink_logit': True},
                     {'sink_rate': None,
                      'note': 'CPU mitigation comparison (experiments/06_mitigations)',
                      'description': 'CPU demo task with a learned per-head sink logit joining every row (gpt-oss)',
                      'scaled': False},
                     {'knob': 'OpenAI gpt-oss (2025); softpick Table 3: 8.78 % at ε 0.3'}),
 '60m-sink-logit': ({'sink_logit': True},
                    {'sink_rate': None,
                     'note': 'not in the paper; softpick Table 3 (their model, 10k steps): 8.78 %',
                     'description': '60M with a learned per-head sink logit joining every row (gpt-oss)',
                     'scaled': False},
                    {'knob': 'OpenAI gpt-oss (2025); softpick Table 3: 8.78 % at ε 0.3'}),
 '1b-sink-logit': ({'sink_logit': True},
                   {'sink_rate': None,
                    'note': 'not measured by the paper at 1B',
                    'description': '1B with a learned per-head sink logit joining every row (gpt-oss)',
                    'scaled': False},
                   {'knob': 'OpenAI gpt-oss (2025); softpick Table 3: 8.78 % at ε 0.3'}),
 'demo-gate': ({'name': 'demo-gate', 'gate': 'elementwise'},
               {'sink_rate': None,
                'note': 'CPU mitigation comparison (experiments/06_mitigations)',
                'description': 'CPU demo task with a sigmoid output gate per channel after attention (Qiu et al. '
                               '2025)',
                'scaled': False},
               {'knob': 'Qiu et al. 2025 "Gated attention for LLMs" (elementwise SDPA-output gate); softpick Table '
                        '3: 2.00 % at ε 0.3'}),
 '60m-gate': ({'gate': 'elementwise'},
              {'sink_rate': None,
               'note': 'not in the paper; softpick Table 3 (their model, 10k steps): 2.0 %',
               'description': '60M with a sigmoid output gate per channel after attention (Qiu et al. 2025)',
               'scaled': False},
              {'knob': 'Qiu et al. 2025 "Gated attention for LLMs" (elementwise SDPA-output gate); softpick Table '
                       '3: 2.00 % at ε 0.3'}),
 '1b-gate': ({'gate': 'elementwise'},
             {'sink_rate': None,
              'note': 'not measured by the paper at 1B',
              'description': '1B with a sigmoid output gate per channel after attention (Qiu et al. 2025)',
              'scaled': False},
             {'knob': 'Qiu et al. 2025 "Gated attention for LLMs" (elementwise SDPA-output gate); softpick Table '
                      '3: 2.00 % at ε 0.3'}),
 'demo-softpick': ({'name': 'demo-softpick', 'attention': 'softpick'},
                   {'sink_rate': None,
                    'note': 'CPU mitigation comparison (experiments/06_mitigations)',
                    'description': 'CPU demo task with softpick: rectified softmax that may sum below one',
                    'scaled': False},
                   {'knob': 'Zuhri et al. 2025, arXiv 2504.20966'}),
 '60m-softpick': ({'attention': 'softpick'},
                  {'sink_rate': None,
                   'note': 'not in the paper',
                   'description': '60M with softpick: rectified softmax that may sum below one',
                   'scaled': False},
                  {'knob': 'Zuhri et al. 2025, arXiv 2504.20966'}),
 '1b-softpick': ({'attention': 'softpick'},
                 {'sink_rate': None,
                  'note': 'not measured by the paper at 1B',
                  'description': '1B with softpick: rectified softmax that may sum below one',
                  'scaled': False},
                 {'knob': 'Zuhri et al. 2025, arXiv 2504.20966'}),
 'demo-sigmoid': ({'name': 'demo-sigmoid', 'attention': 'sigmoid', 'normalize': False},
                  {'sink_rate': None,
                   'note': 'the paper: sigmoid attention without normalisation has no sink (0.44* at 60M)',
                   'description': "CPU demo: the softmax demo's twin with sigmoid attention without normalisation",
                   'scaled': False},
                  {}),
 '60m-sigmoid': ({'attention': 'sigmoid', 'normalize': False},
                 {'sink_rate': 0.44,
                  'proxy': True,
                  'setting': '60M, 5B tokens of the Pile sample, 20k steps',
                  'description': '60M with sigmoid attention without normalisation',
                  'scaled': False},
                 {'knob': 'reference code model_attn_sim.py / model_attn_kernel.py: kernels after RoPE, shared '
                          'across heads; eps 1e-8 in row sums, clamp(|sum|, 1) for signed kernels; the metric '
                          "reads the paper's proxy weights"}),
 '1b-sigmoid': ({'attention': 'sigmoid', 'normalize': False},
                {'sink_rate': 2.46,
                 'proxy': True,
                 'valid_loss': 3.1,
                 'setting': '1B, 5B tokens, 40k steps',
                 'description': '1B with sigmoid attention without normalisation',
                 'scaled': False},
                {'knob': 'reference config tinyllama_1_1b_sim_sigmoid_no_norm'}),
 'demo-k-bias': ({'name': 'demo-k-bias', 'k_bias': True},
                 {'sink_rate': None,
                  'note': 'CPU mitigation comparison (experiments/06_mitigations)',
                  'description': 'CPU demo task with a learnable key bias (v* = 0)',
                  'scaled': False},
                 {'knob': 'the paper §7.2'}),
 '60m-k-bias': ({'k_bias': True},
                {'sink_rate': 0.23,
                 'setting': '60M, 5B tokens of the Pile sample, 20k steps',
                 'sink_star': 68.31,
                 'note': 'the paper (App. D.4, Table 12 right): biases shared across heads; its Table 4 numbers '
                         'are the per-head runs',
                 'description': '60M with a learnable key bias shared by all heads (v* = 0)',
                 'scaled': False},
                {'knob': 'reference code model_kv_bias.py: bias key prepended after RoPE (never rotated), init '
                         'N(0, 0.02), Sink* with the zero query row'}),
 '1b-k-bias': ({'k_bias': True},
               {'sink_rate': None,
                'note': 'not measured by the paper at 1B',
                'description': '1B with a learnable key bias (v* = 0)',
                'scaled': False},
               {'knob': 'the paper §7.2'}),
 'demo-kv-bias': ({'name': 'demo-kv-bias', 'k_bias': True, 'v_bias': True},
                  {'sink_rate': None,
                   'note': 'CPU mitigation comparison (experiments/06_mitigations)',
                   'description': 'CPU demo task with a learnable key and value bias',
                   'scaled': False},
                  {'knob': 'the paper §7.2'}),
 '60m-kv-bias': ({'k_bias': True, 'v_bias': True},
                 {'sink_rate': 12.44,
                  'setting': '60M, 5B tokens of the Pile sample, 20k steps',
                  'sink_star': 56.61,
                  'note': 'the paper (App. D.4, Table 12 right): biases shared across heads; its Table 4 numbers '
                          'are the per-head runs',
                  'description': '60M with a learnable key and value bias shared by all heads',
                  'scaled': False},
                 {'knob': 'reference code model_kv_bias.py: bias key prepended after RoPE (never rotated), init '
                          'N(0, 0.02), Sink* with the zero query row'}),
 '1b-kv-bias': ({'k_bias': True, 'v_bias': True},
                {'sink_rate': None,
                 'note': 'not measured by the paper at 1B',
                 'description': '1B with a learnable key and value bias',
                 'scaled': False},
                {'knob': 'the paper §7.2'}),
 'demo-sink-token': ({'name': 'demo-sink-token', 'sink_token': True},
                     {'sink_rate': None,
                      'note': 'CPU mitigation comparison (experiments/06_mitigations)',
                      'description': 'CPU demo task with a learnable sink token prepended to every sequence',
                      'scaled': False},
                     {'knob': 'the paper §7.2 (Sun et al. 2024)'}),
 '60m-sink-token': ({'sink_token': True},
                    {'sink_rate': 0.0,
                     'sink_star': 74.12,
                     'setting': '60M, 5B tokens of the Pile sample, 20k steps',
                     'description': '60M with a learnable sink token prepended to every sequence',
                     'scaled': False},
                    {'knob': 'paper text only: the released reference code has no sink-token model'}),
 '1b-sink-token': ({'sink_token': True},
                   {'sink_rate': None,
                    'note': 'not measured by the paper at 1B',
                    'description': '1B with a learnable sink token prepended to every sequence',
                    'scaled': False},
                   {'knob': 'the paper §7.2 (Sun et al. 2024)'})}

BASES = {'demo': 'demo-softmax', '60m': '60m-default', '1b': '1b-softmax'}


@pytest.mark.parametrize('name', list(SHIPPED))
@pytest.mark.parametrize('overrides', [[], ['scale=cpu']])
def test_shipped_mitigation_config_resolves_as_its_file_did(name, overrides):
    fields, paper, sources = SHIPPED[name]
    model, train, said = load_run_config(name, overrides)
    base_model, base_train, base_paper = load_run_config(BASES[name.split('-')[0]], overrides)
    assert dataclasses.asdict(model) == dataclasses.asdict(base_model) | fields
    assert dataclasses.asdict(train) == dataclasses.asdict(base_train)
    assert {k: v for k, v in said.items() if k != 'sources'} == paper | dict(scaled=bool(overrides))
    assert said['sources'] == base_paper['sources'] | sources


def test_every_shipped_name_is_listed():
    assert set(SHIPPED) | set(BASES.values()) <= set(list_configs())
