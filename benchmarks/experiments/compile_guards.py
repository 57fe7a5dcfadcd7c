"""Whether fuse changes the compiled SD UNet (run 12's run_torch_gpu.sh: compile + fuse 0.72x compile, the modes
timed one after another while the host's speed drifted 2x): the graphs dynamo makes with and without fuse (graph
breaks, recompiles, ops captured), then ms per forward of the two compiled models in alternated rounds (FP16,
batch 1, the default compile mode: what dynamo traces does not depend on the mode); medians. --tiny: the tiny UNet
in FP32 on the CPU (Inductor's C++ kernels: the host side of the compiled forward, with and without fuse)."""

import functools
import statistics
import sys
import time
from pathlib import Path

import torch
from torch._dynamo.utils import counters

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bench_models as bm  # noqa: E402

import trtplugins.torch as tt  # noqa: E402

tiny = "--tiny" in sys.argv
bm.DEVICE = "cpu" if tiny else "cuda"
sync = (lambda: None) if tiny else torch.cuda.synchronize
models = {}
for fused in (False, True):
    counters.clear()
    model = bm.build_unet(torch.float32 if tiny else torch.float16, tiny)
    if fused:
        tt.fuse(model)
    inputs = bm.unet_inputs(model, 1, torch.Generator(device=bm.DEVICE).manual_seed(0))
    compiled = torch.compile(model)
    with torch.inference_mode():
        t = time.perf_counter()
        compiled(*inputs)
        first = time.perf_counter() - t
    c = {k: dict(v) for k, v in counters.items() if k in ("graph_break", "stats", "recompiles", "unimplemented")}
    print(f"fuse={fused}: first call {first:.1f} s; counters {c}", flush=True)
    models["compile+fuse" if fused else "compile"] = (compiled, inputs)


def ms_per_forward(compiled, inputs) -> float:
    for _ in range(3):
        compiled(*inputs)
    sync()
    t = time.perf_counter()
    for _ in range(10):
        compiled(*inputs)
    sync()
    return (time.perf_counter() - t) / 10 * 1e3


with torch.inference_mode():
    times = bm.rounds({name: functools.partial(ms_per_forward, *m) for name, m in models.items()}, 8)
base = statistics.median(times["compile"])
for name, ts in times.items():
    m = statistics.median(ts)
    print(f"{name:13s} {m:.2f} ms per forward ({base / m:.3f}x compile), rounds {[round(t, 2) for t in ts]}")
