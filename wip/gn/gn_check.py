#!/usr/bin/env python3
"""Scratch check of the new GroupNorm kernel (wip/gn) on the GPU, in one process: correctness against a
float64 reference over both layouts, every fused variant and every plan (fused with all units resident,
fused with half resident, two launches), in place, NaN confinement, the FP16 limit, padded channel
strides (the pad written as zero), CUDA-graph capture; then timing beside the current kernel, eager
F.group_norm (channels-first and channels-last tensors), max-autotune torch.compile, Liger-Kernel,
TensorRT OSS's groupNorm kernel (channels-last FP16) and a device copy.

  nvcc ... -o build/libgn2.so wip/gn/group_norm.cu wip/gn/capi.cu     (see wip/gn/run.sh)
  python3 wip/gn/gn_check.py --out $OUT [--no-bench] [--compile-budget 150]
"""
from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
import bench_kernels as bk  # noqa: E402
from trtplugins import reference  # noqa: E402

DT = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
NAME = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}
TOL = {torch.float32: (1e-5, 0.0), torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2)}
CF, CL = 0, 1
DEV = os.environ.get("GN_DEVICE", "cuda")
SKIP = {None: 0, "full": 1, "channel": 2}
# name -> (bias, beta, skip, silu, sum output)
VARIANTS = {
    "silu": (False, True, None, True, False),
    "gamma+beta": (False, True, None, False, False),
    "bias+silu": (True, True, None, True, False),
    "skip+sum": (False, True, "full", False, True),
    "temb+bias+silu+sum": (True, True, "channel", True, True),
}
BENCH_VARIANTS = {"group_norm": ("gamma+beta", False), "group_norm_silu": ("silu", True)}
vp, ll, ull = ctypes.c_void_p, ctypes.c_longlong, ctypes.c_ulonglong
LL4 = ll * 4


def load_new(path):
    lib = ctypes.CDLL(str(path))
    lib.gn2_workspace.argtypes = [ll, ll]
    lib.gn2_workspace.restype = ull
    lib.gn2_configure.argtypes = [ctypes.c_int, ctypes.c_int, ll, ll, ll, ll, ll, ctypes.c_int, ctypes.c_int, LL4]
    lib.gn2_run.argtypes = [ctypes.c_int, ctypes.c_int, ll, ll, ll, ll, ll, ctypes.c_int, vp, vp, vp, vp, vp, vp, vp, vp,
                            ull, ctypes.c_float, ctypes.c_int, vp, vp, vp]
    lib.gn2_probe.argtypes = [ctypes.c_int, ctypes.c_int, vp]
    return lib


def load_old(path):
    lib = ctypes.CDLL(str(path))
    lib.gn_old_run.argtypes = [ctypes.c_int, vp, vp, ctypes.c_int, vp, vp, vp, vp, vp, vp, ull, ll, ll, ll, ll,
                               ctypes.c_float, ctypes.c_int, vp]
    lib.gn_old_workspace.argtypes = [ll, ll]
    lib.gn_old_workspace.restype = ull
    return lib


def ptr(t):
    return None if t is None else t.data_ptr()


class Problem:
    """One GroupNorm call's tensors. Channels-last: buffers [N, H, W, cs] (NaN-poisoned), logical NCHW views."""

    def __init__(self, shape, groups, dt, variant, layout=CF, cs=None, offset=0, gen=None, scale=2.0, shift=3.0):
        self.shape, self.groups, self.dt, self.layout = tuple(shape), groups, dt, layout
        self.bias_on, self.beta_on, self.skip_kind, self.silu, self.with_sum = VARIANTS[variant]
        n, c = shape[:2]
        self.cs = cs or c
        g = gen or torch.Generator(device=DEV).manual_seed(0)
        rnd = lambda s, sc=1.0, sh=0.0: torch.randn(s, generator=g, device=DEV) * sc + sh  # noqa: E731
        self.x = self.buffer(offset)
        self.view(self.x).copy_(rnd(self.shape, scale, shift))
        self.skip = None
        if self.skip_kind == "full":
            self.skip = self.buffer(offset)
            self.view(self.skip).copy_(rnd(self.shape))
        elif self.skip_kind == "channel":
            pc = (n, c) + (1,) * (len(shape) - 2)
            self.skip = self.buffer(offset, pc)
            self.view(self.skip, pc).copy_(rnd(pc))
        self.gamma = rnd((c,), 0.5, 1.0)
        self.beta = rnd((c,), 0.5) if self.beta_on else None
        self.bias = rnd((c,), 0.5) if self.bias_on else None
        self.y = self.buffer(offset)
        self.sum = self.buffer(offset) if self.with_sum else None

    def buffer(self, offset, shape=None):
        shape = shape or self.shape
        if self.layout == CL:
            phys = (shape[0],) + tuple(shape[2:]) + (self.cs,)
        else:
            phys = shape
        k = math.prod(phys)
        buf = torch.full((k + offset + 16,), float("nan"), dtype=self.dt, device=DEV)
        return buf[offset:offset + k].view(phys)

    def view(self, buf, shape=None):
        """The logical N, C, ... view of a buffer."""
        shape = shape or self.shape
        if self.layout == CL:
            perm = (0, buf.dim() - 1) + tuple(range(1, buf.dim() - 1))
            return buf[..., : shape[1]].permute(perm)
        return buf

    def reference(self):
        s = self.view(self.x).double()
        chan = (1, self.shape[1]) + (1,) * (len(self.shape) - 2)
        if self.bias is not None:
            s = s + self.bias.double().view(chan)
        if self.skip is not None:
            s = s + self.view(self.skip, None if self.skip_kind == "full" else (self.shape[0], self.shape[1]) + (1,) * (len(self.shape) - 2)).double()
        s = s.contiguous()
        n = self.shape[0]
        gv = s.reshape(n, self.groups, -1)
        mean = gv.mean(-1, keepdim=True)
        var = ((gv - mean) ** 2).mean(-1, keepdim=True)
        y = ((gv - mean) / torch.sqrt(var + 1e-5)).reshape(s.shape) * self.gamma.double().view(chan)
        if self.beta is not None:
            y = y + self.beta.double().view(chan)
        if self.silu:
            y = y * torch.sigmoid(y)
        return y, s

    def spatial(self):
        return math.prod(self.shape[2:])


def run_new(lib, p: Problem, ws, plan=None, y=None, stream=None):
    n, c = p.shape[:2]
    ran = LL4()
    forced = None if plan is None else LL4(*plan)
    y = p.y if y is None else y
    rc = lib.gn2_run(DT[p.dt], p.layout, n, c, p.spatial(), p.groups, p.cs if p.layout == CL else 0, SKIP[p.skip_kind],
                     ptr(p.x), ptr(p.skip), ptr(p.bias), ptr(p.gamma), ptr(p.beta), ptr(y), ptr(p.sum), ptr(ws),
                     ws.numel(), 1e-5, int(p.silu), None if forced is None else ctypes.cast(forced, vp),
                     ctypes.cast(ran, vp), stream or torch.cuda.current_stream().cuda_stream)
    if rc:
        raise RuntimeError(f"gn2_run failed: {rc}")
    return tuple(ran)


def plans(lib, p: Problem):
    n, c = p.shape[:2]
    conf, two = LL4(), LL4()
    args = (DT[p.dt], p.layout, n, c, p.spatial(), p.groups, p.cs if p.layout == CL else 0, SKIP[p.skip_kind])
    lib.gn2_configure(*args, 0, conf)
    lib.gn2_configure(*args, 1, two)
    out = {"configured": tuple(conf), "two-launch": tuple(two)}
    grid, per, res, fused = tuple(conf)
    if fused and per > 1:
        align = 16 // p.x.element_size() if p.layout == CF else 1
        half = max(0, (per // 2) // align * align)
        out["half-resident"] = (grid, per, min(half, res), 1)
    return out


def compare(got, ref, dt, what, pad=None):
    """Max error / bound as tests/gpu/test_kernels.py; raises on failure."""
    atol, rtol = TOL[dt]
    g = got.double()
    if not torch.isfinite(g).all():
        raise AssertionError(f"{what}: non-finite output")
    scale = max(float(ref.abs().max()), 1.0)
    diff = (g - ref).abs()
    ratio = float((diff / (atol * scale + rtol * ref.abs())).max())
    if ratio > 1.0:
        raise AssertionError(f"{what}: {ratio:.2f} x bound (max err {float(diff.max()) / scale:.3e} x scale)")
    return ratio


def check_outputs(p: Problem, y_buf, what):
    ref_y, ref_s = p.reference()
    r = compare(p.view(y_buf), ref_y, p.dt, what + " y")
    if p.sum is not None:
        r = max(r, compare(p.view(p.sum), ref_s, p.dt, what + " s"))
    if p.layout == CL and p.cs > p.shape[1]:
        for name, b in (("y", y_buf), ("s", p.sum)):
            if b is not None and not bool((b[..., p.shape[1]:] == 0).all()):
                raise AssertionError(f"{what}: {name} pad not zero")
    return r


CF_SHAPES = [((2, 320, 64, 64), 32), ((2, 1280, 8, 8), 32), ((1, 32, 1, 1), 32), ((2, 64, 7, 7), 1),
             ((2, 64, 7, 7), 64), ((3, 48, 5, 3), 16), ((2, 16, 33), 4), ((1, 8, 3, 4, 5), 2), ((1, 64, 128, 128), 1),
             ((8, 640, 32, 32), 32)]
CL_SHAPES = [((2, 320, 64, 64), 32, 320), ((2, 1280, 8, 8), 32, 1280), ((2, 40, 9, 7), 8, 40), ((2, 20, 5, 5), 4, 24),
             ((1, 3, 4, 4), 3, 8), ((2, 64, 7, 7), 64, 64), ((2, 64, 7, 7), 1, 64), ((1, 512, 32, 32), 32, 512),
             ((3, 960, 16, 16), 32, 960), ((2, 20, 6, 6), 5, 20), ((2, 3, 5, 5), 3, 3)]


def correctness(new, log, quick=False):
    ws = torch.empty(int(new.gn2_workspace(8, 64)), dtype=torch.uint8, device=DEV)
    worst, runs, fails = 0.0, 0, []
    cases = [(s, g, CF, None, 0) for s, g in CF_SHAPES] + [(s, g, CL, cs, 0) for s, g, cs in CL_SHAPES]
    cases += [((2, 320, 8, 8), 32, CF, None, 1), ((2, 320, 8, 8), 32, CL, 320, 1)]  # unaligned: the scalar paths
    if quick:  # small shapes, for the sanitizers
        cases = [c for c in cases if math.prod(c[0]) <= 64 * 1024]
    for dt in ((torch.float32, torch.float16) if quick else (torch.float32, torch.float16, torch.bfloat16)):
        for shape, groups, layout, cs, off in cases:
            for variant in VARIANTS:
                p = Problem(shape, groups, dt, variant, layout, cs, off)
                for pname, plan in plans(new, p).items():
                    what = f"{NAME[dt]} {'CL' if layout else 'CF'} {shape}/{groups} cs={cs} off={off} {variant} {pname}"
                    try:
                        p.y.fill_(float("nan"))
                        if p.sum is not None:
                            p.sum.fill_(float("nan"))
                        ran = run_new(new, p, ws, None if pname == "configured" else plan)
                        torch.cuda.synchronize()
                        if pname != "configured" and ran != tuple(plan) and off == 0:
                            raise AssertionError(f"ran {ran}, forced {plan}")
                        worst = max(worst, check_outputs(p, p.y, what))
                    except Exception as e:  # noqa: BLE001
                        fails.append(f"{what}: {e}")
                    runs += 1
    log(f"correctness grid: {runs} runs, worst err/bound {worst:.3f}, {len(fails)} failures")
    for f in fails[:40]:
        log("  FAIL " + f)
    return fails


def special(new, log):
    """In place, determinism, CUDA-graph capture, NaN confined, FP16 limit, tensors past on-chip capacity."""
    fails = []
    ws = torch.empty(int(new.gn2_workspace(8, 64)), dtype=torch.uint8, device=DEV)

    def expect(cond, what):
        if not cond:
            fails.append(what)
        return cond

    for layout, cs in ((CF, None), (CL, 320)):
        tag = "CL" if layout else "CF"
        for dt in (torch.float16, torch.float32):
            for variant in VARIANTS:
                p = Problem((2, 320, 64, 64), 32, dt, variant, layout, cs)
                run_new(new, p, ws)
                y1 = p.y.clone()
                run_new(new, p, ws)
                expect(torch.equal(p.y, y1), f"{tag} {NAME[dt]} {variant}: not deterministic")
                # in place: y written over x
                x0 = p.x.clone()
                run_new(new, p, ws, y=p.x)
                torch.cuda.synchronize()
                expect(torch.equal(p.x, y1) if p.sum is None else torch.equal(p.x, y1), f"{tag} {NAME[dt]} {variant}: in place differs")
                p.x.copy_(x0)
                # CUDA graph
                g = torch.cuda.CUDAGraph()
                p.y.fill_(float("nan"))
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    run_new(new, p, ws)
                torch.cuda.current_stream().wait_stream(s)
                p.y.fill_(float("nan"))
                with torch.cuda.graph(g):
                    run_new(new, p, ws)
                g.replay()
                torch.cuda.synchronize()
                expect(torch.equal(p.y, y1), f"{tag} {NAME[dt]} {variant}: CUDA graph replay differs")
        # NaN confined to its group (sample 0, group 3)
        p = Problem((2, 320, 16, 16), 32, torch.float16, "gamma+beta", layout, cs)
        p.view(p.x)[0, 31, 5, 5] = float("nan")
        run_new(new, p, ws)
        torch.cuda.synchronize()
        yv = p.view(p.y).float()
        bad = ~torch.isfinite(yv)
        grp = bad.reshape(2, 32, -1).any(-1)
        expect(bool(grp[0, 3]) and int(grp.sum()) == 1 and bool(bad[0, 30:40].all()), f"{tag}: NaN not confined to its group")
        # FP16 limit: values up to ~6e4
        p = Problem((2, 320, 16, 16), 32, torch.float16, "bias+silu", layout, cs, scale=1.0, shift=0.0)
        p.view(p.x).copy_((torch.rand(p.shape, device=DEV) * 6e4).half())
        run_new(new, p, ws)
        torch.cuda.synchronize()
        try:
            check_outputs(p, p.y, f"{tag} fp16 limit")
        except AssertionError as e:
            fails.append(str(e))
        # past on-chip capacity: the hybrid plan (and two launches)
        for variant in ("gamma+beta", "temb+bias+silu+sum"):
            p = Problem((1, 512, 256, 256), 32, torch.float16, variant, layout, 512 if layout else None)
            for pname, plan in plans(new, p).items():
                p.y.fill_(float("nan"))
                ran = run_new(new, p, ws, None if pname == "configured" else plan)
                torch.cuda.synchronize()
                try:
                    check_outputs(p, p.y, f"{tag} 1x512x256x256 {variant} {pname} {ran}")
                except AssertionError as e:
                    fails.append(str(e))
            del p
    log(f"special checks: {len(fails)} failures")
    for f in fails:
        log("  FAIL " + f)
    return fails


# ---- benchmark ---------------------------------------------------------------------------------------

SD15 = [(320, 64), (640, 32), (1280, 16), (1280, 8), (2560, 8), (1920, 16), (960, 32), (640, 64)]
SDXL = [(320, 128), (640, 64), (1280, 32)]
VAE = [(512, 64), (512, 128), (512, 256), (256, 256), (256, 512), (128, 512), (128, 1024)]


def bench_shapes():
    out = [(b, c, h, h, "sd15") for b in (1, 2, 8) for c, h in SD15]
    out += [(b, c, h, h, "sdxl") for b in (1, 2) for c, h in SDXL]
    out += [(1, c, h, h, "vae") for c, h in VAE]
    return out


COMPILE_AT = {(2, 320, 64, 64), (2, 640, 32, 32), (2, 1280, 16, 16), (2, 1280, 8, 8), (2, 2560, 8, 8), (8, 640, 64, 64),
              (2, 320, 128, 128), (1, 512, 128, 128), (1, 256, 256, 256), (1, 128, 512, 512), (1, 512, 256, 256)}


def timeit(fn, nbytes):
    return bk.graph_time(fn, nbytes / 3.0e12 + 3e-6)


def bench(new, old, log, args, save):
    sys.path.insert(0, str(ROOT / ".peers" / "trtoss_groupnorm"))
    try:
        import trtoss_gn
    except Exception as e:  # noqa: BLE001
        trtoss_gn = None
        log(f"no TensorRT OSS peer: {e}")
    lig = None
    try:
        from liger_kernel.ops.group_norm import group_norm_forward as lig
    except Exception as e:  # noqa: BLE001
        log(f"no Liger peer: {e}")
    ws = torch.empty(int(new.gn2_workspace(8, 32)), dtype=torch.uint8, device=DEV)
    wso = torch.empty(int(old.gn_old_workspace(8, 32)), dtype=torch.uint8, device=DEV)
    rows, compile_spent = [], 0.0
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    s0 = torch.cuda.current_stream().cuda_stream
    probe = {"empty": timeit(lambda: new.gn2_probe(sms, 0, torch.cuda.current_stream().cuda_stream), 0),
             "grid_barrier": timeit(lambda: new.gn2_probe(sms, 1, torch.cuda.current_stream().cuda_stream), 0)}
    log(f"floor: empty launch of {sms} CTAs x 512 threads {probe['empty'] * 1e6:.2f} us, with one grid barrier "
        f"{probe['grid_barrier'] * 1e6:.2f} us")
    del s0
    for n, c, h, w, family in bench_shapes():
        for dt in (torch.float16, torch.bfloat16):
            xbytes = n * c * h * w * 2
            copy = bk.copy_time(2 * xbytes)
            for op, (variant, silu) in BENCH_VARIANTS.items():
                pf = Problem((n, c, h, w), 32, dt, variant, CF, shift=1.0)
                pl = Problem((n, c, h, w), 32, dt, variant, CL, c, shift=1.0)
                pl.view(pl.x).copy_(pf.x)
                pl.gamma, pl.beta, pl.bias = pf.gamma, pf.beta, pf.bias
                rec = {"op": op, "dtype": NAME[dt], "shape": [n, c, h, w], "family": family, "mb": xbytes / 1e6, "copy": copy}
                chan = lambda x, b=pf.bias: x if b is None else x + b.to(x.dtype).view(1, -1, 1, 1)  # noqa: E731
                wdt, bdt = pf.gamma.to(dt), pf.beta.to(dt)

                def eager(x, wv=wdt, bv=bdt, s=silu, ch=chan):
                    y = F.group_norm(ch(x), 32, wv, bv, 1e-5)
                    return F.silu(y) if s else y

                xcl = pf.x.contiguous(memory_format=torch.channels_last)
                fns = {
                    "ours_cf": lambda: run_new(new, pf, ws),
                    "ours_cl": lambda: run_new(new, pl, ws),
                    "old_cf": lambda: old.gn_old_run(DT[dt], ptr(pf.x), None, 0, ptr(pf.bias), ptr(pf.gamma), ptr(pf.beta),
                                                     ptr(pf.y), None, ptr(wso), wso.numel(), n, c, h * w, 32, 1e-5, int(silu),
                                                     torch.cuda.current_stream().cuda_stream),
                    "eager_cf": lambda: eager(pf.x),
                    "eager_cl": lambda: eager(xcl),
                }
                if lig is not None and not silu:
                    fns["liger"] = lambda: lig(pf.x, c, 32, wdt, bdt, 1e-5)[0]
                if trtoss_gn is not None and dt == torch.float16:
                    ok, _ = trtoss_gn.supported(n, h, w, c, 32)
                    if ok and pf.bias is None:
                        xn = xcl.permute(0, 2, 3, 1)
                        tws = trtoss_gn.make_workspace(n)
                        fns["trtoss_cl"] = trtoss_gn.bind(xn, 32, pf.gamma, pf.beta, 1e-5, silu, workspace=tws)
                if (n, c, h, w) in COMPILE_AT and dt == torch.float16 and compile_spent < args.compile_budget:
                    t0 = time.time()
                    try:
                        cfn = bk.compiled(eager, (pf.x,))
                        fns["compile_cf"] = lambda: cfn(pf.x)
                    except Exception as e:  # noqa: BLE001
                        rec["compile_error"] = str(e)[:200]
                    compile_spent += time.time() - t0
                # check ours against eager first
                ref = eager(pf.x).float()
                for key in ("ours_cf", "ours_cl", "old_cf"):
                    fns[key]()
                torch.cuda.synchronize()
                for key, got in (("ours_cf", pf.view(pf.y)), ("ours_cl", pl.view(pl.y))):
                    bad = bk.mismatch(got.contiguous(), ref.to(dt).contiguous())
                    if bad:
                        rec[f"{key}_wrong"] = bad
                        log(f"  WRONG {key} {op} {NAME[dt]} {(n, c, h, w)}: {bad}")
                for key, fn in fns.items():
                    try:
                        rec[key] = timeit(fn, 2 * xbytes)
                    except Exception as e:  # noqa: BLE001
                        rec[f"{key}_error"] = str(e)[:200]
                rec["plan_cf"] = plans(new, pf)["configured"]
                rec["plan_cl"] = plans(new, pl)["configured"]
                rows.append(rec)
                save({"probe": probe, "rows": rows})
                log(line(rec))
                del pf, pl, xcl, fns
    return {"probe": probe, "rows": rows}


def us(t):
    return "-" if t is None else f"{t * 1e6:.1f}"


def line(r):
    c = r["copy"]
    cells = [f"{r['op']:15s} {r['dtype']} {'x'.join(map(str, r['shape'])):>16s} {r['mb']:7.1f}MB copy {us(c):>6s}"]
    for k in ("ours_cf", "ours_cl", "old_cf", "eager_cf", "eager_cl", "compile_cf", "liger", "trtoss_cl"):
        t = r.get(k)
        if t:
            cells.append(f"{k} {us(t)} ({100 * c / t:.0f}%)")
    return " | ".join(cells)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--new", default=str(ROOT / "build" / "libgn2.so"))
    ap.add_argument("--old", default=str(ROOT / "build" / "libgn_old.so"))
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "build")))
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--compile-budget", type=float, default=100.0)
    ap.add_argument("--quick", action="store_true", help="small shapes only, no special checks, no bench (sanitizers)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    logf = open(args.out / ("gn_quick.log" if args.quick else "gn_check.log"), "w")

    def log(s):
        print(s, flush=True)
        logf.write(s + "\n")
        logf.flush()

    new, old = load_new(args.new), load_old(args.old)
    log(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    fails = []
    if not args.no_check:
        t0 = time.time()
        fails += correctness(new, log, args.quick)
        if not args.quick:
            fails += special(new, log)
        log(f"checks took {time.time() - t0:.0f} s")
    result = {"env": bk.env_info(), "fails": fails}

    def save(part):
        result.update(part)
        (args.out / "gn_check.json").write_text(json.dumps(result, indent=1))

    if not args.quick:
        save({})
    if not args.no_bench and not args.quick:
        t0 = time.time()
        bench(new, old, log, args, save)
        log(f"bench took {time.time() - t0:.0f} s")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
