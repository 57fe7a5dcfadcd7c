#!/usr/bin/env python3
"""Small launches: where a graph replay's time per launch goes. For each point, ours, the
max-autotune compiled chain and Liger's op are each captured as a graph of K launches and replayed
under the CUDA profiler (CUPTI); per peer: the time per launch (as bench_kernels.py measures it),
the mean device duration of its kernels and the mean gap from one kernel's end to the next's start.

  python3 benchmarks/experiments/small_trace.py layer_norm:fp16:1x768 bias_gelu:fp16:8x768 ...
"""

import json
import statistics
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import bench_kernels as bk  # noqa: E402

K = 50


def trace(fn):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(K):
            fn()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        g.replay()
        torch.cuda.synchronize()
    ev = sorted((e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA and e.device_time > 0),
                key=lambda e: e.time_range.start)
    dur = [e.device_time for e in ev]  # us
    gaps = [b.time_range.start - a.time_range.end for a, b in zip(ev, ev[1:])]
    names = sorted({e.name[:60] for e in ev})
    return {"per_launch_us": bk.graph_time(fn, 2e-6) * 1e6, "kernels": len(ev) / K,
            "kernel_us": statistics.mean(dur) if dur else None, "gap_us": statistics.median(gaps) if gaps else None,
            "names": names}


def main():
    out = []
    for spec in sys.argv[1:]:
        op, dname, shape = spec.split(":")
        rows, hidden = map(int, shape.split("x"))
        dt = bk.DTYPES[dname]
        ours, chain, cargs, liger, _ = bk.make_op(op, rows, hidden, dt)
        rec = {"point": spec, "ours": trace(ours), "compile": trace(lambda c=bk.compiled(chain, cargs): c(*cargs))}
        if liger:
            rec["liger"] = trace(liger)
        out.append(rec)
        print(spec, "  ".join(f"{p} {r['per_launch_us']:.2f}us/launch kernel {r['kernel_us']:.2f} gap {r['gap_us']:.2f} "
                              f"n={r['kernels']:.0f}" for p, r in rec.items() if p != "point"), flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
