"""Where the host time of the SD UNet's forward goes, eager and eager + fuse (issue 33): ms per
forward with a synchronize after each, the Python functions with the most own time (cProfile), and the
CUDA runtime calls with the most host time (torch.profiler: a synchronizing or slow call of ours shows
there, which cProfile only sees as time inside the ctypes call)."""

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
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(5):
            model(*inputs)
        torch.cuda.synchronize()
    runtime = [e for e in prof.key_averages() if e.key.startswith("cuda") or e.key.startswith("cu")]
    print("CUDA runtime calls, 5 forwards: calls, host us total, us per call")
    for e in sorted(runtime, key=lambda e: -e.self_cpu_time_total)[:15]:
        print(f"  {e.key:40s} {e.count:6d} {e.self_cpu_time_total:10.0f} {e.self_cpu_time_total / e.count:8.1f}")

# Run 5 profiled our op inside compile + fuse although fuse's under_compile default runs torch's ops there
# (a CPU run of the tiny UNet traces none): the ops dynamo traces on this GPU, before Inductor.
traced = []


def recording(gm, example_inputs):
    traced.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
    return gm.forward


with torch.inference_mode():
    torch._dynamo.reset()
    torch.compile(model, dynamic=False, backend=recording)(*inputs)
ours = sorted({t for t in traced if "trtplugins" in t})
print(f"traced under torch.compile: {len(traced)} ops, ours: {ours or 'none'}; graph breaks: "
      f"{torch._dynamo.utils.counters['graph_break'] or 'none'}")
