"""Host time per call of trtplugins.torch's ops beside the torch code they replace (issue 33).

A model whose GPU work is small per op (the SD UNet at batch 1, under eager or a compile without CUDA
graphs) runs as fast as the host issues its ops, so a fused op pays only where its call costs the
host no more than the calls it replaces. For each op, at a small shape (host-bound) and a model
shape: the host microseconds to issue one call (a loop of --calls, timed before the synchronize) and
the microseconds per call with the GPU's time included (CUDA events), for the torch code, our op
called as the modules call it (trtplugins.torch.<op>: straight to the kernels in eager), and the
same op through the dispatcher (torch.ops.trtplugins.<op>, as compiled code calls it). And the parts of
our call (`--parts`): the C entry's call alone as the prepared launch makes it (ctypes, the entry's host
work and its CUDA launch, the pointers fixed), the same entry with 0 rows (ctypes' argument conversion
alone: it returns before any CUDA call) and an empty kernel launched through ctypes; with `--cpp` also the
fused modules' calls through the Python launches and through the C++ ones (trtplugins.torch.use_cpp())
beside torch's modules.

    python benchmarks/bench_torch_overhead.py --out build/torch-overhead
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

import trtplugins.torch as tt
from trtplugins import kernels
from trtplugins.ops import skip_norm as sn
from trtplugins.torch import _cpp, _kernels

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from bench_ops import EPS, rms_chain  # noqa: E402  (HF LLaMA's RMSNorm, as the kernel benchmark times it)

OPS = torch.ops.trtplugins


def cases(dtype):
    dev = dict(device="cuda", dtype=dtype)
    for shape in ((1, 320, 8, 8), (2, 320, 64, 64)):
        x, w, b = torch.randn(shape, **dev), torch.randn(shape[1], **dev), torch.randn(shape[1], **dev)
        yield "group_norm+silu", shape, {
            "torch": lambda x=x, w=w, b=b: F.silu(F.group_norm(x, 32, w, b)),
            "ours": lambda x=x, w=w, b=b: tt.group_norm(x, num_groups=32, gamma=w, beta=b, activation="silu"),
            "ours via dispatcher": lambda x=x, w=w, b=b: OPS.group_norm(x, num_groups=32, gamma=w, beta=b,
                                                                        activation="silu"),
        }
    for shape in ((1, 16, 768), (2, 4096, 320), (8, 512, 4096)):
        x, w, b = torch.randn(shape, **dev), torch.randn(shape[-1], **dev), torch.randn(shape[-1], **dev)
        yield "layer_norm", shape, {
            "torch": lambda x=x, w=w, b=b: F.layer_norm(x, x.shape[-1:], w, b),
            "ours": lambda x=x, w=w, b=b: tt.skip_norm(x, gamma=w, beta=b, norm="layer"),
            "ours via dispatcher": lambda x=x, w=w, b=b: OPS.skip_norm(x, gamma=w, beta=b, norm="layer"),
        }
        yield "rms_norm (HF chain)", shape, {
            "torch": lambda x=x, w=w: rms_chain(x, w),
            "ours": lambda x=x, w=w: tt.skip_norm(x, gamma=w, norm="rms", epsilon=EPS),
            "ours via dispatcher": lambda x=x, w=w: OPS.skip_norm(x, gamma=w, norm="rms", epsilon=EPS),
        }


def parts(dtype, cpp=None):
    """The parts of one call of ours: the prepared launch's C entry call alone, ctypes alone, a bare launch; with
    cpp (the built C++ launches), the fused modules' calls both ways beside torch's modules."""
    dev = dict(device="cuda", dtype=dtype)
    stream = kernels.current_stream(torch.cuda.current_device())
    empty = kernels.load().trtp_empty_launch
    for shape in ((1, 320, 8, 8), (2, 320, 64, 64)):
        x, w = torch.randn(shape, **dev), torch.ones(shape[1], device="cuda")
        y, ws = torch.empty_like(x), torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
        run = _kernels._group_norm_launch(x, None, 32, "silu", 1e-5, False).entry
        p = (x.data_ptr(), 0, 0, w.data_ptr(), w.data_ptr(), y.data_ptr(), 0, ws.data_ptr(), ws.numel(), stream)
        yield "group_norm+silu", shape, {"C entry alone": lambda p=p, run=run: run(*p),
                                         "empty launch (ctypes)": lambda: empty(stream)}
        if cpp is not None:
            gn = torch.nn.GroupNorm(32, shape[1]).to(**dev)
            act, fused = torch.nn.SiLU(), tt.FusedGroupNorm.from_module(gn, "silu")
            yield "group_norm+silu", shape, {"torch's modules": lambda x=x, gn=gn, act=act: act(gn(x)),
                                             **_module_rows(fused, x, cpp)}
    for shape in ((1, 16, 768), (2, 4096, 320)):
        x, w = torch.randn(shape, **dev), torch.ones(shape[-1], device="cuda")
        y = torch.empty_like(x)
        run = _kernels._skip_norm_launch(x, None, "layer", 1e-5, False, False).entry
        none = sn.launcher(kernels.dtype_name(x), 0, shape[-1], 1e-5, "layer")  # 0 rows: returns at once
        p = (x.data_ptr(), 0, 0, w.data_ptr(), w.data_ptr(), y.data_ptr(), 0, stream)
        yield "layer_norm", shape, {"C entry alone": lambda p=p, run=run: run(*p),
                                    "C entry, 0 rows (ctypes alone)": lambda p=p, none=none: none(*p)}
        if cpp is not None:
            ln = torch.nn.LayerNorm(shape[-1]).to(**dev)
            yield "layer_norm", shape, {"torch's module": lambda x=x, ln=ln: ln(x),
                                        **_module_rows(tt.FusedLayerNorm.from_module(ln), x, cpp)}


def _module_rows(fused, x, cpp) -> dict:
    """A fused module's call through the Python launches and through the C++ ones."""
    def call(ext):
        _cpp.ext = ext
        return fused(x)
    return {"fused module (Python launches)": lambda: call(None), "fused module (C++ launches)": lambda: call(cpp)}


def timed(fn, calls: int) -> tuple[float, float]:
    """(host us per call, us per call with the GPU)."""
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - t) / calls * 1e6
    end.record()
    torch.cuda.synchronize()
    return host, start.elapsed_time(end) * 1e3 / calls


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="build/torch-overhead")
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--parts", action="store_true", help="also time the parts of our call (see above)")
    p.add_argument("--cpp", action="store_true", help="with --parts: the fused modules through the C++ launches too")
    a = p.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    todo = list(cases(torch.float16))  # weights made outside inference mode, as a model's are
    todo += list(parts(torch.float16, tt.use_cpp() if a.cpp else None)) if a.parts else []
    with torch.inference_mode():
        for dtype in (torch.float16,):
            for op, shape, impls in todo:
                for impl, fn in impls.items():
                    host, total = timed(fn, a.calls)
                    rows.append({"op": op, "shape": list(shape), "dtype": str(dtype).removeprefix("torch."),
                                 "impl": impl, "host_us": round(host, 2), "us_per_call": round(total, 2)})
                    print(json.dumps(rows[-1]), flush=True)
    lines = [f"# Host time per call: trtplugins.torch beside torch ({torch.cuda.get_device_name()}, "
             f"torch {torch.__version__}, {a.calls} calls after 10)\n",
             "| op | shape | impl | host us per call | us per call (GPU included) |", "|---|---|---|---|---|"]
    lines += [f"| {r['op']} | {'x'.join(map(str, r['shape']))} | {r['impl']} | {r['host_us']:.1f} | "
              f"{r['us_per_call']:.1f} |" for r in rows]
    (out / "torch_overhead.json").write_text(json.dumps(rows, indent=1) + "\n")
    (out / "torch_overhead.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
