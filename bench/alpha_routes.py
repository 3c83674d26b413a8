"""One layer of SmolLM2-135M's shape (9 query heads, 3 key heads, d_h 64, random q and k), float32, CPU: α by each
route of `metrics.ALPHA_ROUTES` against the layer's sdpa forward, the fastest of 3, and each route's largest |Δα| from
the chunk walk. 03_metrics quotes its figures: `python bench/alpha_routes.py 2048` (and 1024)."""
import sys, time, warnings

import torch
import torch.nn.functional as F

from sink_nb.metrics import ALPHA_ROUTES, importance_from_qk

warnings.filterwarnings('ignore')
if len(sys.argv) != 2 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
    sys.exit('usage: python bench/alpha_routes.py T   (T: query rows, an integer >= 1)')
T = int(sys.argv[1])
g = torch.Generator().manual_seed(0)
q, k = torch.randn(1, 9, T, 64, generator=g), torch.randn(1, 3, T, 64, generator=g)
def best(f, n=3):
    f()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)
fwd = best(lambda: F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True))
print(f"T={T} threads={torch.get_num_threads()} sdpa forward of the layer: {fwd * 1e3:.1f} ms")
ref = importance_from_qk(q, k, alpha_route='chunked')
for r in ALPHA_ROUTES:
    s = best(lambda: importance_from_qk(q, k, alpha_route=r))
    d = (importance_from_qk(q, k, alpha_route=r) - ref).abs().max().item()
    print(f"  {r:>9}: {s * 1e3:8.1f} ms  ({s / fwd:5.1f}x the forward)  |Δα| vs chunked {d:.1e}")
