"""Where the SD UNet's forward time goes, eager and eager + fuse (issue 33): ms per forward (host, and
with a synchronize), the GPU's kernel time per forward and its launches (torch.profiler: a forward whose
host time is near its kernel time is GPU-bound, the launch queue holding the host back), the kernels
with the most GPU time, the Python functions with the most own time (cProfile) and the CUDA runtime
calls with the most host time; then the host cost per call of the fused GroupNorm beside torch's
GroupNorm + SiLU, in a loop; then the ops dynamo traces under torch.compile + fuse."""

import copy
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import bench_models as bm  # noqa: E402

import trtplugins.torch as tt  # noqa: E402


def timed(call, n, warm=3):
    """Seconds per call(): the host's time to issue n calls, and the time until the GPU has run them."""
    for _ in range(warm):
        call()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        call()
    host = (time.perf_counter() - t) / n
    torch.cuda.synchronize()
    return host, (time.perf_counter() - t) / n


def per_forward(model, inputs, n=10):
    """ms per forward: (host, with the GPU)."""
    return tuple(s * 1e3 for s in timed(lambda: model(*inputs), n))


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
    ops = {e.key: e for e in events if e.key.startswith("aten::") or e.key.startswith("trtplugins")}
    runtime = [e for e in events if e.key.startswith("cuda") or e.key.startswith("cu")]
    print(f"{tag}: CUDA runtime calls per forward: calls, host us per call")
    for e in sorted(runtime, key=lambda e: -e.self_cpu_time_total)[:8]:
        print(f"  {e.key[:60]:60s} {e.count / n:7.0f} {e.self_cpu_time_total / e.count:8.1f}")
    return {k: (e.count / n, e.cpu_time_total / n) for k, e in ops.items()}


def op_changes(before, after):
    """The aten ops whose count per forward fuse changed, with their host us per forward (with children)."""
    print("aten ops per forward, eager -> eager+fuse: count, host us (with what they call)")
    for k in sorted(set(before) | set(after), key=lambda k: -abs(after.get(k, (0, 0))[1] - before.get(k, (0, 0))[1])):
        (c0, t0), (c1, t1) = before.get(k, (0, 0)), after.get(k, (0, 0))
        if c0 != c1:
            print(f"  {k[:50]:50s} {c0:6.0f} -> {c1:6.0f}   {t0:9.0f} -> {t1:9.0f}")


def per_class(model, inputs, n=5):
    """Host us per forward inside each module class (inclusive of its children), from forward hooks."""
    spent, start = {}, {}

    def pre(m, args):
        start[id(m)] = time.perf_counter()

    def post(m, args, out):
        k = type(m).__name__
        spent[k] = spent.get(k, 0.0) + time.perf_counter() - start.pop(id(m))

    hooks = [h for m in model.modules() for h in (m.register_forward_pre_hook(pre), m.register_forward_hook(post))]
    model(*inputs)
    torch.cuda.synchronize()
    spent.clear()
    for _ in range(n):
        model(*inputs)
    torch.cuda.synchronize()
    for h in hooks:
        h.remove()
    return {k: v / n * 1e6 for k, v in spent.items()}


def host_per_call(fn, x, n=300):
    """us of host time per fn(x), in a loop."""
    return timed(lambda: fn(x), n, warm=20)[0] * 1e6


model = bm.build_unet(torch.float16)  # weights made outside inference mode, as a loaded model's
inputs = bm.unet_inputs(model, 1, torch.Generator(device="cuda").manual_seed(0))
with torch.inference_mode():
    print("eager: host ms per forward %.2f, with the GPU %.2f" % per_forward(model, inputs))
    eager_model = copy.deepcopy(model)
    classes = per_class(model, inputs)
    before = gpu_profile("eager", model, inputs)
    print(tt.fuse(model))
    print("eager+fuse: host ms per forward %.2f, with the GPU %.2f" % per_forward(model, inputs))
    op_changes(before, gpu_profile("eager+fuse", model, inputs))
    fused_classes = per_class(model, inputs)
    # The host's speed drifts within a session (run 6: eager 24-45 ms per forward on two machines): alternated
    host = {"eager": eager_model, "fuse": model}
    per = bm.rounds({k: (lambda m=m: per_forward(m, inputs)[0]) for k, m in host.items()}, 8)
    e, f = statistics.median(per["eager"]), statistics.median(per["fuse"])
    print(f"alternated, host ms per forward (median of 8): eager {e:.2f}, eager+fuse {f:.2f}: {e / f:.3f}x; "
          f"rounds {[(round(a, 1), round(b, 1)) for a, b in zip(per['eager'], per['fuse'])]}")
    print("host us per forward inside each module class (with its children; hooks on every module): eager | fuse")
    for k in sorted(set(classes) | set(fused_classes), key=lambda k: -max(classes.get(k, 0), fused_classes.get(k, 0))):
        print(f"  {k:32s} {classes.get(k, 0):9.0f} {fused_classes.get(k, 0):9.0f}")
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
        with torch.inference_mode(False):  # parameters as a loaded model's, not inference tensors
            norm = torch.nn.GroupNorm(32, shape[1]).cuda().half()
        fused = tt.FusedGroupNorm.from_module(norm, activation="silu")
        print(f"  {shape}: {host_per_call(fused, x):.1f} | {host_per_call(lambda v: F.silu(norm(v)), x):.1f}")
    print(f"  this host: nn.Identity() call {host_per_call(torch.nn.Identity(), x):.2f} us, torch.empty_like "
          f"{host_per_call(torch.empty_like, x):.2f}, F.silu {host_per_call(F.silu, x):.2f}")

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
