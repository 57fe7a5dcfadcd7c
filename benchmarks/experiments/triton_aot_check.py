"""Issue 34 on a GPU: the Triton SkipNorm cubins built ahead of time (plugin_src/triton_aot.py), loaded
and launched through the CUDA driver API as the plugin would (no Triton at run time), checked against
the eager chain and timed beside our CUDA kernel, the max-autotune compile and a copy (CUDA-graph
medians, scripts/bench_timing.py). Writes OUT/triton_aot.json and .md.

    python plugin_src/triton_aot.py --archs 90 --out build/triton-aot
    python benchmarks/experiments/triton_aot_check.py --aot build/triton-aot --out build/triton-aot
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))
from bench_ops import rms_chain  # noqa: E402
from bench_timing import compiled, copy_time, graph_time, mismatch  # noqa: E402

from trtplugins.ops import skip_norm  # noqa: E402

_cuda = ctypes.CDLL("libcuda.so.1")
DYN_SMEM = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES


def _ok(code: int, what: str) -> None:
    if code:
        raise RuntimeError(f"{what}: CUDA driver error {code}")


class Cubin:
    """One manifest entry's kernel, loaded into the current context."""

    def __init__(self, aot: Path, entry: dict):
        self.e, self.fn, mod = entry, ctypes.c_void_p(), ctypes.c_void_p()
        self.image = (aot / entry["cubin"]).read_bytes()
        _ok(_cuda.cuModuleLoadData(ctypes.byref(mod), self.image), "cuModuleLoadData")
        _ok(_cuda.cuModuleGetFunction(ctypes.byref(self.fn), mod, entry["symbol"].encode()), "cuModuleGetFunction")
        if entry["shared"] > 48 * 1024:
            _ok(_cuda.cuFuncSetAttribute(self.fn, DYN_SMEM, entry["shared"]), "cuFuncSetAttribute")

    def __call__(self, x, skip, gamma, beta, y, s, eps=1e-5):
        rows = x.numel() // self.e["hidden"]
        vals = [ctypes.c_void_p(t.data_ptr() if t is not None else 0) for t in (x, skip, None, gamma, beta, y, s)]
        vals += [ctypes.c_int32(rows), ctypes.c_float(eps), ctypes.c_void_p(0), ctypes.c_void_p(0)]
        params = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in vals])
        grid = -(-rows // self.e["XBLOCK"])
        _ok(_cuda.cuLaunchKernel(self.fn, grid, 1, 1, 32 * self.e["num_warps"], 1, 1, self.e["shared"],
                                 ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), params, None),
            "cuLaunchKernel")


def chain_of(form: str):
    rms, skip = "rms" in form, form.startswith("skip")

    def chain(x, r, g, b):
        s = x + r if skip else x
        y = rms_chain(s, g) if rms else F.layer_norm(s, s.shape[-1:], g, b)
        return (y, s) if skip else y
    return chain


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--aot", type=Path, default=Path("build/triton-aot"))
    p.add_argument("--out", type=Path, default=Path("build/triton-aot"))
    p.add_argument("--mib", type=int, default=96, help="tensor size per point")
    p.add_argument("--no-compile", dest="compile", action="store_false")
    a = p.parse_args(argv)
    cc = "sm_%d%d" % torch.cuda.get_device_capability()
    entries = [e for e in json.loads((a.aot / "manifest.json").read_text()) if e["arch"] == cc]
    rows_out = []
    for e in entries:
        dt = getattr(torch, e["dtype"])
        hidden, form = e["hidden"], e["form"]
        rows = max(1, a.mib * 2**20 // (hidden * dt.itemsize))
        x, r = (torch.randn(rows, hidden, device="cuda", dtype=dt) for _ in range(2))
        g, b = torch.randn(hidden, device="cuda"), torch.randn(hidden, device="cuda")
        y, s = torch.empty_like(x), torch.empty_like(x)
        k, sk = Cubin(a.aot, e), "skip" in form
        rms = "rms" in form
        k(x, r if sk else None, g, None if rms else b, y, s if sk else None)
        chain = chain_of(form)
        want = chain(x, r, g.to(dt) if rms else g, b)
        got = (y, s) if sk else y
        row = dict(form=form, dtype=e["dtype"], hidden=hidden, rows=rows, registers=e["registers"],
                   config=[e["kernel"], e["XBLOCK"], e["RBLOCK"], e["num_warps"]], mismatch=mismatch(got, want))
        nbytes = x.numel() * dt.itemsize * (4 if sk else 2)
        row["aot_us"] = 1e6 * graph_time(lambda: k(x, r if sk else None, g, None if rms else b, y, s if sk else None),
                                         nbytes / 3e12)
        row["ours_us"] = 1e6 * graph_time(lambda: skip_norm.kernel(x, r if sk else None, gamma=g, beta=None if rms else b,
                                                                  norm="rms" if rms else "layer", output_sum=sk),
                                          nbytes / 3e12)
        if a.compile:
            cfn = compiled(chain, (x, r, g.to(dt) if rms else g, b))
            row["compile_us"] = 1e6 * graph_time(lambda: cfn(x, r, g.to(dt) if rms else g, b), nbytes / 3e12)
        row["copy_us"] = 1e6 * copy_time(nbytes)
        rows_out.append(row)
        print(json.dumps(row), flush=True)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "triton_aot.json").write_text(json.dumps(rows_out, indent=1) + "\n")
    lines = ["| form | dtype | hidden | AOT us | ours us | compile us | copy us | AOT % of copy | check |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r_ in rows_out:
        lines.append(f"| {r_['form']} | {r_['dtype']} | {r_['hidden']} | {r_['aot_us']:.1f} | {r_['ours_us']:.1f} | "
                     f"{r_.get('compile_us', float('nan')):.1f} | {r_['copy_us']:.1f} | "
                     f"{100 * r_['copy_us'] / r_['aot_us']:.0f} | {r_['mismatch'] or 'ok'} |")
    (a.out / "triton_aot.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
