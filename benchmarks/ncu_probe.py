#!/usr/bin/env python3
"""One launch each of the kernels whose ncu numbers RESULTS.md quotes (run under ncu, -c 4):
LayerNorm FP16 32768x4096 (staged block path), skip+LayerNorm FP16 4096x16384, LayerNorm FP16
32768x768 (warp path), bias+GELU FP16 32768x4096."""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from trtplugins.ops import bias_activation, skip_norm  # noqa: E402

g = torch.Generator(device="cuda").manual_seed(0)
for rows, h, skip in ((32768, 4096, False), (4096, 16384, True), (32768, 768, False)):
    x = torch.randn(rows, h, device="cuda", generator=g).half()
    sk = torch.randn(rows, h, device="cuda", generator=g).half() if skip else None
    w = torch.randn(h, device="cuda", generator=g) * 0.1 + 1
    b = torch.randn(h, device="cuda", generator=g) * 0.1
    skip_norm.kernel(x, sk, gamma=w, beta=b, norm="layer", epsilon=1e-5, out=torch.empty_like(x))
x = torch.randn(32768, 4096, device="cuda", generator=g).half()
bias_activation.kernel(x, torch.randn(4096, device="cuda", generator=g), "gelu", out=torch.empty_like(x))
torch.cuda.synchronize()
