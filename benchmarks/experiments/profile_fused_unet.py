"""Where the host time of the SD UNet's forward goes, eager and eager + fuse (issue 33): ms per
forward with a synchronize after each, and the Python functions with the most own time (cProfile)."""

import cProfile
import pstats
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bench_models as bm  # noqa: E402

import trtplugins.torch as tt  # noqa: E402


def per_forward(model, inputs, n=10):
    for _ in range(3):
        model(*inputs)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        model(*inputs)
    host = (time.perf_counter() - t) / n * 1e3
    torch.cuda.synchronize()
    return host, (time.perf_counter() - t) / n * 1e3


model = bm.build_unet(torch.float16)  # weights made outside inference mode, as a loaded model's
inputs = bm.unet_inputs(model, 1, torch.Generator(device="cuda").manual_seed(0))
with torch.inference_mode():
    print("eager: host ms per forward %.2f, with the GPU %.2f" % per_forward(model, inputs))
    print(tt.fuse(model))
    print("eager+fuse: host ms per forward %.2f, with the GPU %.2f" % per_forward(model, inputs))
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(5):
        model(*inputs)
    torch.cuda.synchronize()
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(25)
