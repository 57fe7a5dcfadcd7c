"""Where the SD UNet's forward time goes, eager and eager + fuse (issue 33): ms per forward (host, and
with a synchronize), the GPU's kernel time per forward and its launches (torch.profiler: a forward whose
host time is near its kernel time is GPU-bound, the launch queue holding the host back), the kernels
with the most GPU time, the Python functions with the most own time (cProfile) and the CUDA runtime
calls with the most host time; then the host cost per call of the fused GroupNorm beside torch's
GroupNorm + SiLU, in a loop; then the ops dynamo traces under torch.compile + fuse."""

import cProfile
import pstats
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

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


def gpu_profile(tag, model, inputs, n=5):
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        for _ in range(n):
            model(*inputs)
        torch.cuda.synchronize()
    events = prof.key_averages()
    kernels = [e for e in events if e.self_device_time_total > 0 and e.device_type == torch.autograd.DeviceType.CUDA]
    gpu_ms = sum(e.self_device_time_total for e in kernels) / n / 1e3
    launches = sum(e.count for e in kernels) / n
    print(f"{tag}: GPU kernel time {gpu_ms:.2f} ms per forward, {launches:.0f} kernels per forward")
    for e in sorted(kernels, key=lambda e: -e.self_device_time_total)[:10]:
        print(f"  {e.key[:90]:90s} {e.count // n:5d} x {e.self_device_time_total / e.count:8.1f} us")
    runtime = [e for e in events if e.key.startswith("cuda") or e.key.startswith("cu")]
    print(f"{tag}: CUDA runtime calls per forward: calls, host us per call")
    for e in sorted(runtime, key=lambda e: -e.self_cpu_time_total)[:8]:
        print(f"  {e.key[:60]:60s} {e.count / n:7.0f} {e.self_cpu_time_total / e.count:8.1f}")


def host_per_call(fn, x, n=300):
    for _ in range(20):
        fn(x)
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn(x)
    us = (time.perf_counter() - t) / n * 1e6
    torch.cuda.synchronize()
    return us


model = bm.build_unet(torch.float16)  # weights made outside inference mode, as a loaded model's
inputs = bm.unet_inputs(model, 1, torch.Generator(device="cuda").manual_seed(0))
with torch.inference_mode():
    print("eager: host ms per forward %.2f, with the GPU %.2f" % per_forward(model, inputs))
    gpu_profile("eager", model, inputs)
    print(tt.fuse(model))
    print("eager+fuse: host ms per forward %.2f, with the GPU %.2f" % per_forward(model, inputs))
    gpu_profile("eager+fuse", model, inputs)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(5):
        model(*inputs)
    torch.cuda.synchronize()
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(20)

    print("host us per call in a loop (no synchronize): fused GroupNorm+SiLU | torch GroupNorm + SiLU")
    for shape in ((1, 320, 64, 64), (1, 1280, 8, 8)):
        x = torch.randn(*shape, device="cuda", dtype=torch.float16)
        norm = torch.nn.GroupNorm(32, shape[1]).cuda().half()
        fused = tt.FusedGroupNorm.from_module(norm, activation="silu")
        print(f"  {shape}: {host_per_call(fused, x):.1f} | {host_per_call(lambda v: F.silu(norm(v)), x):.1f}")

# Run 5 profiled our op inside compile + fuse (torch 2.11's dynamo read torch.compiler.is_exporting() as
# True: pytorch/pytorch#176347): the ops dynamo traces on this GPU, before Inductor.
traced = []


def recording(gm, example_inputs):
    traced.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
    return gm.forward


with torch.inference_mode():
    torch._dynamo.reset()
    torch.compile(model, dynamic=False, backend=recording)(*inputs)
ours = sorted({t for t in traced if "trtplugins" in t})
print(f"torch {torch.__version__}: traced under torch.compile: {len(traced)} ops, ours: {ours or 'none'}; graph "
      f"breaks: {torch._dynamo.utils.counters['graph_break'] or 'none'}")
