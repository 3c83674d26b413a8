"""A pytest plugin that registers one late entry in every registry, as a contributor's package would: loaded with
`pytest -p _late_entries` (tests/ on the path), its entries are collected by tests/test_conformance.py with no test
code. Every name holds 'late', so `-k late` selects exactly them."""
import dataclasses

import torch

from sink_nb.attention import ATTENTION_OPS
from sink_nb.head_stats import HEAD_STATISTICS, HeadStat
from sink_nb.positions import POSITIONS, RoPE
from sink_nb.run_configs import MITIGATIONS
from sink_nb.stream import POLICIES, Policy
from sink_nb.studies import CPU_STUDIES


class LateRoPE(RoPE):
    "RoPE with positions counted from 1."
    def rotate(self, q, k, positions): return super().rotate(q, k, positions + 1)


def strided(t, window, sinks):
    "The first `sinks` positions, every 8th, and the last `window`."
    return sorted(set(range(min(sinks, t + 1))) | set(range(0, t + 1, 8)) | set(range(max(0, t + 1 - window), t + 1)))


ATTENTION_OPS['late_sigmoid'] = dataclasses.replace(ATTENTION_OPS['sigmoid'], name='late_sigmoid')
POSITIONS['late_rope'] = LateRoPE
HEAD_STATISTICS['late_max_share'] = HeadStat('late_max_share', 'largest share of each query row, mean over rows',
                                             lambda b: b.shares.amax(-1).sum(-1), lambda total, T: total / T)
POLICIES['late-strided'] = Policy('late-strided', 'the first `sinks` keys, every 8th older key and the last `window`',
                                  strided, sink_slots=True, grows=True)
CPU_STUDIES['late-study'] = {'wd=0.1 (demo)': {}, 'wd=1': dict(weight_decay=1.0)}
MITIGATIONS['late-gated-bias'] = dict(gate='elementwise', k_bias=True)
torch.manual_seed(0)
