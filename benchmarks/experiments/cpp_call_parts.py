"""Where a fused module's eager call spends its host time with the C++ launches (use_cpp()): each piece of
the call timed alone in a loop (host us per call, median of 5 runs of 2000 calls), beside torch's own module;
then the C++ call with the other kinds of weight (16-bit ones, as above, pass through the FP32-copy cache),
then cProfile of the fused LayerNorm's call. FP16, LayerNorm 1x16x768, GroupNorm + SiLU 1x320x8x8.
    python3 benchmarks/experiments/cpp_call_parts.py"""
import cProfile
import pstats
import statistics
import time

import torch
import torch.nn.functional as F

import trtplugins.torch as tt
from trtplugins.torch import modules


def us(f, n=2000):
    for _ in range(50):
        f()
    torch.cuda.synchronize()
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        for i in range(n):
            f()
            if i % 200 == 199:
                torch.cuda.synchronize()
        runs.append((time.perf_counter() - t) / n * 1e6)
        torch.cuda.synchronize()
    return statistics.median(runs)


def main():
    ext = tt.use_cpp()
    dev = "cuda"
    x = torch.randn(1, 16, 768, device=dev, dtype=torch.half)
    xc = torch.randn(1, 16, 768, dtype=torch.half)
    ln = torch.nn.LayerNorm(768).to(dev, torch.half)
    fused = tt.FusedLayerNorm.from_module(ln)
    w, b = ln.weight, ln.bias
    nid = modules.NORM_IDS["layer"]
    with torch.no_grad():
        rows = {
            "torch nn.LayerNorm": lambda: ln(x),
            "F.layer_norm": lambda: F.layer_norm(x, (768,), w, b, 1e-5),
            "FusedLayerNorm (C++ launches)": lambda: fused(x),
            "ext.skip_norm direct": lambda: ext.skip_norm(x, None, w, b, None, nid, 1e-5, False),
            "ext.skip_norm, CPU x (refused at once: pybind alone)": lambda: ext.skip_norm(xc, None, w, b, None, nid,
                                                                                         1e-5, False),
            "torch.empty_like(x)": lambda: torch.empty_like(x),
            "modules._fast(x)": lambda: modules._fast(x),
            "modules._compiled(fused)": lambda: modules._compiled(fused),
            "torch.compiler.is_compiling()": torch.compiler.is_compiling,
            "torch.jit.is_tracing()": torch.jit.is_tracing,
            "fused.weight, fused.bias": lambda: (fused.weight, fused.bias),
            "x.contiguous()": lambda: x.contiguous(),
        }
        for name, f in rows.items():
            print(f"| {name} | {us(f):.2f} |", flush=True)
        gn = torch.nn.GroupNorm(32, 320).to(dev, torch.half)
        fg = tt.FusedGroupNorm.from_module(gn, activation="silu")
        xg = torch.randn(1, 320, 8, 8, device=dev, dtype=torch.half)
        gid = modules.GN_ACTIVATION_IDS["silu"]
        for name, f in {
            "torch GroupNorm + SiLU": lambda: F.silu(gn(xg)),
            "FusedGroupNorm (C++ launches)": lambda: fg(xg),
            "ext.group_norm direct": lambda: ext.group_norm(xg, None, 32, gn.weight, gn.bias, None, gid, 1e-5, False),
        }.items():
            print(f"| {name} | {us(f):.2f} |", flush=True)
        w32, b32 = w.float(), b.float()
        for name, f in {
            "ext.skip_norm, FP32 weight and bias": lambda: ext.skip_norm(x, None, w32, b32, None, nid, 1e-5, False),
            "ext.skip_norm, FP32 weight only": lambda: ext.skip_norm(x, None, w32, None, None, nid, 1e-5, False),
            "ext.skip_norm, FP16 weight only": lambda: ext.skip_norm(x, None, w, None, None, nid, 1e-5, False),
            "torch.add(x, x)": lambda: torch.add(x, x),
        }.items():
            print(f"| {name} | {us(f):.2f} |", flush=True)
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(5000):
            fused(x)
        pr.disable()
        torch.cuda.synchronize()
        pstats.Stats(pr).sort_stats("tottime").print_stats(14)


if __name__ == "__main__":
    main()
