"Every registry of entries a command reads is a `checks.Registry`: entries checked on insert, built-ins kept."
import dataclasses
import re

import pytest
import torch

from sink_nb.attention import ATTENTION_OPS, AttentionOp
from sink_nb.checks import Registry, check_entry
from sink_nb.head_stats import HEAD_STATISTICS
from sink_nb.positions import POSITIONS, RoPE
from sink_nb.run_configs import MITIGATIONS
from sink_nb.stream import POLICIES

REGISTRIES = {'ATTENTION_OPS': ATTENTION_OPS, 'POLICIES': POLICIES, 'MITIGATIONS': MITIGATIONS,
              'HEAD_STATISTICS': HEAD_STATISTICS, 'POSITIONS': POSITIONS}


@pytest.mark.parametrize('name', REGISTRIES)
def test_every_entry_passes_its_registry_check_and_the_builtins_stay(name):
    registry = REGISTRIES[name]
    assert isinstance(registry, Registry) and registry.name == name and registry.builtins <= set(registry)
    for key in registry: assert check_entry(registry, key, registry[key]) is registry[key]
    builtin = sorted(registry.builtins)[0]
    with pytest.raises(ValueError, match=f"{builtin!r} is a built-in of {name}: it stays registered"):
        del registry[builtin]
    assert builtin in registry


@pytest.mark.parametrize('name', REGISTRIES)
def test_an_entry_of_the_wrong_kind_is_refused_on_insert_naming_the_registry_and_key(name):
    registry = REGISTRIES[name]
    with pytest.raises(TypeError, match=rf"{name}\['zz-odd'\] must be a \w+, got str"):
        registry['zz-odd'] = 'str'                                       # MITIGATIONS['x'] = 'str' was accepted
    assert 'zz-odd' not in registry


def test_an_op_with_a_bogus_normalizer_is_refused_on_insert_not_at_the_forward_pass():
    with pytest.raises(ValueError, match=r"`ATTENTION_OPS\['zz-bogus'\]\.normalizer` must be one of \['softmax'"):
        ATTENTION_OPS['zz-bogus'] = AttentionOp('zz-bogus', normalizer='bogus')
    with pytest.raises(ValueError, match=r"ATTENTION_OPS\['zz-other'\] is named 'softmax'"):
        ATTENTION_OPS['zz-other'] = ATTENTION_OPS['softmax']
    assert not {'zz-bogus', 'zz-other'} & set(ATTENTION_OPS)


def test_a_late_entry_of_each_registry_comes_and_goes():
    late = {'ATTENTION_OPS': dataclasses.replace(ATTENTION_OPS['sigmoid'], name='zz-late'),
            'MITIGATIONS': dict(gate='elementwise'),
            'POLICIES': dataclasses.replace(POLICIES['window'], name='zz-late'),
            'HEAD_STATISTICS': dataclasses.replace(HEAD_STATISTICS['attn_entropy'], name='zz-late'),
            'POSITIONS': type('LateRoPE', (RoPE,), {})}
    for name, entry in late.items():
        registry = REGISTRIES[name]
        registry['zz-late'] = entry
        try: assert registry['zz-late'] is entry and 'zz-late' not in registry.builtins
        finally: del registry['zz-late']
        assert 'zz-late' not in registry



@pytest.mark.parametrize('entry, says', [
    (dict, "POSITIONS['zz-pos'] must be an nn.Module class"),
    (torch.nn.Linear, "POSITIONS['zz-pos'] (Linear) has no ['from_config', 'embed', 'rotate', 'score_bias']"),
    (type('Unsure', (RoPE,), dict(biases_scores=None)), "POSITIONS['zz-pos'].biases_scores must be True or False"),
    (RoPE(8), "POSITIONS['zz-pos'] must be a type, got RoPE"),
])
def test_a_position_that_is_not_an_encoding_class_is_refused_on_insert(entry, says):
    with pytest.raises((ValueError, TypeError), match=re.escape(says)):
        POSITIONS['zz-pos'] = entry
    assert 'zz-pos' not in POSITIONS


def test_a_builtin_position_is_not_replaced():
    with pytest.raises(ValueError, match="'rope' is a built-in of POSITIONS"):
        POSITIONS['rope'] = type('OtherRoPE', (RoPE,), {})
    assert POSITIONS['rope'] is RoPE
