"""One small LayerNorm launch of ours and one of the max-autotune compiled chain, FP16, warmed up, for ncu
to profile side by side (queued.sh smallncu; issue 34: small launches within 0.2 us of compile):
    python3 benchmarks/experiments/norm_launch.py ROWS HIDDEN"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from trtplugins.ops import skip_norm  # noqa: E402

rows, hidden = map(int, sys.argv[1:3])
x = torch.randn(rows, hidden, device="cuda", dtype=torch.float16)
gamma, beta = torch.randn(hidden, device="cuda"), torch.randn(hidden, device="cuda")
compiled = torch.compile(lambda v: torch.nn.functional.layer_norm(v.float(), (hidden,), gamma, beta, 1e-5).half(),
                         mode="max-autotune-no-cudagraphs")
for _ in range(3):  # compile and autotune before the profiled launches
    compiled(x)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStart()
skip_norm.kernel(x, gamma=gamma, beta=beta)
compiled(x)
torch.cuda.synchronize()
torch.cuda.cudart().cudaProfilerStop()
