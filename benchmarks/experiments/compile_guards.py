"""Why compile + fuse ran the SD UNet slower than compile (run 12: 21.7 against 15.6 ms): graph breaks,
recompiles and frames dynamo gave up on, for the compiled UNet with and without fuse (FP16, batch 1,
the default compile mode: what dynamo traces does not depend on the mode), and host ms per forward."""

import sys
import time
from pathlib import Path

import torch
import torch._dynamo as dynamo
from torch._dynamo.utils import counters

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bench_models as bm  # noqa: E402

import trtplugins.torch as tt  # noqa: E402

for fused in (False, True):
    dynamo.reset()
    counters.clear()
    model = bm.build_unet(torch.float16)
    if fused:
        tt.fuse(model)
    inputs = bm.unet_inputs(model, 1, torch.Generator(device="cuda").manual_seed(0))
    compiled = torch.compile(model)
    with torch.inference_mode():
        t = time.perf_counter()
        compiled(*inputs)
        first = time.perf_counter() - t
        for _ in range(3):
            compiled(*inputs)
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(10):
            compiled(*inputs)
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t) / 10 * 1e3
    c = {k: dict(v) for k, v in counters.items() if k in ("graph_break", "stats", "recompiles", "unimplemented")}
    print(f"fuse={fused}: first call {first:.1f} s, {ms:.2f} ms per forward; counters {c}", flush=True)
