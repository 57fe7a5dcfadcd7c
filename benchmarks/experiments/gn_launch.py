"""One resident GroupNorm launch, FP16, for ncu to profile (queued.sh): the plugin's plan, with `whole` the
whole-segment one, with `cluster K` the cluster plan of K CTAs per group (channels-last: per sample's window);
with `floor BARRIER` that design's floor instead (group_norm.floor with the CTAs bench_group_norm.py gives it);
GN_REPEAT launches in a row (default 1: ncu --launch-skip then profiles a warm one, as in a graph's replays):
    python3 benchmarks/experiments/gn_launch.py LAYOUT N C H W [whole | cluster K | floor BARRIER]"""

import os
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "scripts")]
from bench_group_norm import floor_ctas  # noqa: E402

from trtplugins.ops import group_norm  # noqa: E402

layout, (n, c, h, w) = sys.argv[1], map(int, sys.argv[2:6])
x = torch.randn(n, c, h, w, device="cuda", dtype=torch.float16)
x = x.contiguous(memory_format=torch.channels_last) if layout == "channels_last" else x
ones = torch.ones(c, device="cuda")
plan = True
if sys.argv[6:] == ["whole"]:
    plan = group_norm.resident_plan(n, c, h * w, 32, "float16", layout=layout, whole_segments=True)
elif sys.argv[6:7] == ["cluster"]:
    plan = group_norm.resident_plan(n, c, h * w, 32, "float16", layout=layout, cluster=int(sys.argv[7]))
y = torch.empty_like(x)
if sys.argv[6:7] == ["floor"]:
    ctas, cluster = floor_ctas(sys.argv[7], n * 32, torch.cuda.get_device_properties(0).multi_processor_count)
for _ in range(int(os.environ.get("GN_REPEAT", "1"))):
    if sys.argv[6:7] == ["floor"]:
        group_norm.floor(x, y, sys.argv[7], ctas, cluster)
    else:
        group_norm.kernel(x, num_groups=32, gamma=ones, beta=ones, resident=plan, layout=layout, out=y)
torch.cuda.synchronize()
