#!/usr/bin/env python3
"""Benchmark the fused kernels against their peers, side by side in one process on one GPU:
the unfused PyTorch eager chain, torch.compile(chain, dynamic=False,
mode="max-autotune-no-cudagraphs") compiled afresh for every shape, Liger-Kernel where it has the
op (LayerNorm, RMSNorm, fused add + RMSNorm with the sum output, SwiGLU, GEGLU) and a device-to-device
copy of the same bytes. Liger-Kernel is a benchmark-only dependency (pure Python): install its wheel
with the interpreter that runs this, `python3 -m pip install --no-deps liger_kernel-*.whl` (a bare
`pip` may belong to another Python; without the peer the run warns and its column stays empty).

Before it is timed, each launch of ours (every variant in a sweep) runs once and its outputs are
compared with the eager chain's, to a few units in the last place of the dtype (TOL): a variant that
differs is not timed, and the run says so and exits non-zero (a fast wrong kernel is not a result).

Every variant is timed as CUDA-graph replays of k back-to-back launches (k chosen so one replay
takes ~1 ms), after warm-up; the median over replays / k is the time per launch, so CPU dispatch
never decides a result. Bytes = inputs read once + outputs written once (+ FP32 weights).
Large points put x beyond the L2 (>= 96 MiB); small points are 1 to 64 rows.

  python3 scripts/bench_kernels.py --out benchmarks        # RESULTS.md, bandwidth.png, results.json
  python3 scripts/bench_kernels.py --sweep --out DIR       # time every kernel variant / GroupNorm plan (ours only)
  python3 scripts/bench_kernels.py --ops group_norm group_norm_silu --out DIR   # the GroupNorm family
  python3 scripts/bench_kernels.py --ops swiglu geglu --out DIR                  # the gated units

GroupNorm points are N x C x H x W (32 groups; SD and SD-XL UNet shapes, 5-168 MB); its peers are
eager F.group_norm (+ F.silu) and torch.compile of the same chain (no Liger op).
Gated points are rows x I, I the output width: swiglu reads two [rows, I] tensors (LLaMA's gate and
up projections, I = 11008 and 14336), geglu one [rows, 2 I] tensor (diffusers' GEGLU: tanh GELU on
the second half of x.chunk(2, -1); SD 1.x and SD-XL transformer FFNs); both write [rows, I].
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from trtplugins import kernels, ops  # noqa: E402
from trtplugins.ops import bias_activation, gated_activation, group_norm, skip_norm  # noqa: E402

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
KNAME = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}  # the kernel library's dtype names
HIDDENS = (768, 1024, 2048, 3072, 4096, 5120, 8192, 12288, 16384)
ODD = (4100, 5121, 12289)
SMALL = ((1, 768), (8, 768), (64, 768), (1, 4096), (64, 4096))
X_BYTES = 96 * 2**20
LOOP = 6  # variant index of the first looped-path kernel (skip_norm.cu kLoop)
HOIST = 32  # on a looped variant: each row prefetched into L2 first (skip_norm.cu kHoistBit)
EPS = skip_norm.EPSILON
GN_OPS = ("group_norm", "group_norm_silu")
GATED_OPS = ("swiglu", "geglu")
OPS = ("layer_norm", "skip_layer_norm", "rms_norm", "skip_rms_norm", "bias_gelu", "bias_relu6") + GN_OPS + GATED_OPS
#: GroupNorm points (N, C, H, W), 32 groups: Stable Diffusion 1.x/2.x UNet shapes and SD-XL's
GN_SHAPES = ((2, 320, 64, 64), (2, 640, 32, 32), (8, 640, 64, 64), (2, 320, 128, 128), (2, 1280, 32, 32))
GN_GROUPS = 32
#: gated points (rows, I): SwiGLU at LLaMA-2 7B / LLaMA-3 8B intermediate sizes; GEGLU at SD 1.x (I = 1280,
#: 2560) and SD-XL (2560, 5120) token counts, and a wider one
GATED_POINTS = {"swiglu": tuple((r, i) for r in (4096, 16384) for i in (11008, 14336)),
                "geglu": ((8192, 1280), (2048, 2560), (8192, 2560), (2048, 5120), (2048, 10240))}
NORM_OPS = ("layer_norm", "skip_layer_norm", "rms_norm", "skip_rms_norm")  # the SkipNorm kernel's
#: the plugin each point times (tests/test_completeness.py: every plugin has a point, or says why not)
PLUGIN_OF = {"layer_norm": ops.SKIP_NORM, "skip_layer_norm": ops.SKIP_NORM, "rms_norm": ops.SKIP_NORM,
             "skip_rms_norm": ops.SKIP_NORM, "bias_gelu": ops.BIAS_ACTIVATION, "bias_relu6": ops.BIAS_ACTIVATION,
             "group_norm": ops.GROUP_NORM, "group_norm_silu": ops.GROUP_NORM, "swiglu": ops.GATED_ACTIVATION,
             "geglu": ops.GATED_ACTIVATION}
NOT_BENCHED = {ops.LEGACY_GELU: "BiasActivation's kernel (its gelu_tanh launches: bias_gelu's kernel)"}
PEERS = ("ours", "eager", "compile", "liger")


# --- ops: ours, the eager chain (also what torch.compile compiles), Liger's op ------------------


@functools.cache
def _liger():
    """Liger-Kernel's forward ops, or None (said once on stderr: a missing peer must not pass unnoticed)."""
    try:
        from liger_kernel.ops.fused_add_rms_norm import fused_add_rms_norm_forward
        from liger_kernel.ops.geglu import geglu_forward
        from liger_kernel.ops.layer_norm import layer_norm_forward
        from liger_kernel.ops.rms_norm import rms_norm_forward
        from liger_kernel.ops.swiglu import swiglu_forward
    except ImportError as e:
        print(f"WARNING: no Liger-Kernel peer ({e}); install its wheel with the python that runs this", file=sys.stderr)
        return None
    return {"layer_norm": layer_norm_forward, "rms_norm": rms_norm_forward,
            "fused_add_rms_norm": fused_add_rms_norm_forward, "swiglu": swiglu_forward, "geglu": geglu_forward}


def rms_chain(s, w):  # HF LLaMA's RMSNorm: FP32 statistics, cast back, times the weight
    v = s.float()
    return (v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + EPS)).to(s.dtype) * w


def make_op(name, rows, hidden, dt, variant=-1, io_weights=True):
    """(ours, chain, chain_args, liger or None, bytes) for one op and shape. io_weights: the norms
    also get gamma/beta in the I/O dtype (exact copies, as the plugin has for a 16-bit export)."""
    if name in GATED_OPS:
        return make_gated(name, rows, hidden, dt)
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(rows, hidden, device="cuda", generator=g).to(dt)
    w32 = torch.randn(hidden, device="cuda", generator=g) * 0.1 + 1.0
    b32 = torch.randn(hidden, device="cuda", generator=g) * 0.1
    w, b = w32.to(dt), b32.to(dt)  # the peers take weights in the I/O dtype
    y = torch.empty_like(x)
    n, es = rows * hidden, x.element_size()
    lig = _liger()
    if name.startswith("bias_"):
        act = name[5:]
        ours = lambda: bias_activation.kernel(x, b32, act, out=y)  # noqa: E731
        chain = (lambda x, b: F.gelu(x + b)) if act == "gelu" else (lambda x, b: torch.clamp(torch.relu(x + b), max=6.0))
        return ours, chain, (x, b), None, 2 * n * es + hidden * 4
    skip = torch.randn(rows, hidden, device="cuda", generator=g).to(dt) if name.startswith("skip") else None
    layer = "layer" in name
    with_sum = name == "skip_rms_norm"  # LLaMA's residual stream: the sum is the next block's input
    s_out = torch.empty_like(x) if with_sum else None
    w32, b32 = w.float(), b.float()  # the peers' weights, exactly
    io = io_weights and dt != torch.float32
    ours = lambda: skip_norm.kernel(x, skip, gamma=w32, beta=b32 if layer else None, norm="layer" if layer else "rms",  # noqa: E731
                                     epsilon=EPS, output_sum=with_sum, out=y, sum_out=s_out, variant=variant,
                                     gamma_io=w if io else None, beta_io=b if io and layer else None)
    liger = None
    if layer:
        if skip is None:
            chain, args = (lambda x, w, b: F.layer_norm(x, (hidden,), w, b, EPS)), (x, w, b)
            liger = lig and (lambda: lig["layer_norm"](x, w, b, EPS)[0])
        else:
            chain, args = (lambda x, r, w, b: F.layer_norm(x + r, (hidden,), w, b, EPS)), (x, skip, w, b)
    elif skip is None:
        chain, args = rms_chain, (x, w)
        liger = lig and (lambda: lig["rms_norm"](x, w, EPS, 0.0, "llama", None)[0])
    else:
        def chain(x, r, w):
            s = x + r
            return rms_chain(s, w), s
        args = (x, skip, w)
        liger = lig and (lambda: lig["fused_add_rms_norm"](x, skip, w, EPS, 0.0, "llama")[:2])
    nbytes = (2 + (skip is not None) + with_sum) * n * es + hidden * 4 * (2 if layer else 1)
    return ours, chain, args, liger, nbytes


def geglu_chain(x):  # diffusers' GEGLU with approximate="tanh"
    hidden, gate = x.chunk(2, -1)
    return hidden * F.gelu(gate, approximate="tanh")


def make_gated(name, rows, width, dt):
    """(ours, chain, chain_args, liger or None, bytes) for SwiGLU over two [rows, width] tensors or GEGLU
    over the halves of one [rows, 2 width] tensor; Liger's geglu_forward takes the halves as two
    tensors (made contiguous once, outside the timing)."""
    g = torch.Generator(device="cuda").manual_seed(0)
    y = torch.empty(rows, width, device="cuda", dtype=dt)
    lig = _liger()
    if name == "swiglu":
        a, b = (torch.randn(rows, width, device="cuda", generator=g).to(dt) for _ in range(2))
        ours = lambda: gated_activation.kernel(a, b, activation="silu", out=y)  # noqa: E731
        chain, args = (lambda a, b: F.silu(a) * b), (a, b)
        liger = lig and (lambda: lig["swiglu"](a, b)[2])
    else:
        x = torch.randn(rows, 2 * width, device="cuda", generator=g).to(dt)
        ours = lambda: gated_activation.kernel(x, activation="gelu_tanh", gate="second", out=y)  # noqa: E731
        chain, args = geglu_chain, (x,)
        gate, hidden = x[:, width:].contiguous(), x[:, :width].contiguous()
        liger = lig and (lambda: lig["geglu"](gate, hidden)[2])
    return ours, chain, args, liger, 3 * rows * width * y.element_size()


def make_group_norm(name, shape, dt, plan=None):
    """(ours, chain, chain_args, None, bytes) for GroupNorm (+ SiLU) over an N, C, H, W point; plan:
    one to force (kernels.group_norm's), None: the plugin's."""
    g = torch.Generator(device="cuda").manual_seed(0)
    n, c = shape[:2]
    x = torch.randn(shape, device="cuda", generator=g).to(dt)
    w32 = torch.randn(c, device="cuda", generator=g) * 0.1 + 1.0
    b32 = torch.randn(c, device="cuda", generator=g) * 0.1
    w, b = w32.to(dt), b32.to(dt)
    y = torch.empty_like(x)
    act = "silu" if name.endswith("silu") else "none"
    ws = torch.empty(group_norm.workspace_size(n, GN_GROUPS), dtype=torch.uint8, device="cuda")
    ours = lambda: group_norm.kernel(x, num_groups=GN_GROUPS, gamma=w32, beta=b32, activation=act,  # noqa: E731
                                      epsilon=EPS, out=y, workspace=ws, plan=plan)
    if act == "silu":
        chain = lambda x, w, b: F.silu(F.group_norm(x, GN_GROUPS, w, b, EPS))  # noqa: E731
    else:
        chain = lambda x, w, b: F.group_norm(x, GN_GROUPS, w, b, EPS)  # noqa: E731
    return ours, chain, (x, w, b), None, 2 * x.numel() * x.element_size() + 2 * c * 4


def op_points(op, args, dt):
    """(rows, hidden, make_op result's arguments) of every point of an op: GroupNorm points are
    N, C, H, W shapes (rows = N * C, hidden = H * W); the others rows x hidden."""
    if op in GN_OPS:
        return [(s[0] * s[1], math.prod(s[2:]), s) for s in GN_SHAPES]
    if op in GATED_OPS:
        return [(rows, width, None) for rows, width in GATED_POINTS[op]]
    return [(rows, h, None) for rows, h in points(args, dt)]


# --- output check -------------------------------------------------------------------------------

#: |ours - chain| <= TOL * (1 + |chain|): a few units in the last place of the output dtype (the chains
#: round some intermediates to it; ours keeps them in FP32)
TOL = {torch.float32: 1e-4, torch.float16: 4e-3, torch.bfloat16: 3e-2}


def mismatch(got, want) -> str | None:
    """None where every output of ours (a tensor, or a tuple like the chain's) matches the chain's
    within TOL; else one line saying where it does not (NaN where the chain has none counts)."""
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    if len(got) != len(want):
        return f"ours gives {len(got)} output(s), the chain {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            return f"output {i}: shape {tuple(g.shape)}, the chain's {tuple(w.shape)}"
        g, w = g.flatten().float(), w.flatten().float()
        bad = ~((g - w).abs() <= TOL[want[i].dtype] * (1 + w.abs()))
        if bool(bad.any()):
            k = int(bad.nonzero()[0])
            return (f"output {i}: {int(bad.sum())} of {g.numel()} elements off, first at {k}: "
                    f"{g[k].item():.6g} vs {w[k].item():.6g}")
    return None


def checked(what: str, ours, chain, cargs, wrong: dict | None = None) -> str | None:
    """Runs ours and the eager chain once and compares them (mismatch); where they differ, prints a
    line and records it in `wrong` (what -> the mismatch)."""
    bad = mismatch(ours(), chain(*cargs))
    if bad:
        print(f"  WRONG {what}: {bad}", flush=True)
        if wrong is not None:
            wrong[what] = bad
    return bad


# --- timing -------------------------------------------------------------------------------------


def graph_time(fn, est_s: float, replays: int = 9) -> float:
    """Median seconds per call of fn over graph replays of k back-to-back calls."""
    k = max(1, min(200, int(1e-3 / max(est_s, 1e-6))))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    gr = torch.cuda.CUDAGraph()
    with torch.cuda.graph(gr):
        for _ in range(k):
            fn()
    gr.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(replays):
        start.record()
        gr.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e-3 / k)
    del gr
    return statistics.median(times)


_copy_kernel = None


def _triton_copy():
    """A plain vectorised copy kernel: the driver's memcpy for D2D is slower at some sizes, so the
    limit is the faster of the two."""
    global _copy_kernel
    if _copy_kernel is None:
        try:
            import triton
            import triton.language as tl
        except ImportError:
            _copy_kernel = False
            return None

        @triton.jit
        def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
            m = offs < n
            tl.store(dst + offs, tl.load(src + offs, mask=m), mask=m)

        _copy_kernel = (copy_kernel, triton.cdiv)
    return _copy_kernel or None


def copy_time(nbytes: int) -> float:
    n = max(1, nbytes // 8)  # int32 elements: read n * 4 + write n * 4 bytes
    src = torch.randint(-2**31, 2**31 - 1, (n,), dtype=torch.int32, device="cuda")
    dst = torch.empty_like(src)
    est = nbytes / 3.5e12 + 3e-6
    best = graph_time(lambda: dst.copy_(src), est)
    kc = _triton_copy()
    if kc:
        kernel, cdiv = kc
        block = 4096
        best = min(best, graph_time(lambda: kernel[(cdiv(n, block),)](src, dst, n, BLOCK=block, num_warps=8), est))
    return best


def compiled(chain, args):
    """torch.compile(chain) for this shape, compiled afresh; raises if Dynamo fell back to eager."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    before = counters["stats"]["unique_graphs"]
    cfn = torch.compile(chain, dynamic=False, fullgraph=True, mode="max-autotune-no-cudagraphs")
    cfn(*args)
    if counters["stats"]["unique_graphs"] <= before:
        raise RuntimeError("torch.compile produced no graph (eager fallback)")
    return cfn


def inductor_cache() -> str:
    """Inductor's cache directory (generated kernels and the autotuner's *.best_config picks)."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return cache_dir()


# --- main ---------------------------------------------------------------------------------------


def points(args, dt):
    es = torch.tensor([], dtype=dt).element_size()
    big = [(max(256, math.ceil(X_BYTES / (h * es) / 256) * 256), h) for h in list(args.hiddens) + list(args.odd)]
    return list(SMALL if args.small else ()) + big


def env_info():
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001
        driver = f"unknown ({e})"
    p = torch.cuda.get_device_properties(0)
    liger = None
    if _liger() is not None:
        from importlib.metadata import version

        liger = version("liger-kernel")
    import triton

    return {
        "gpu": torch.cuda.get_device_name(0), "sms": p.multi_processor_count, "driver": driver,
        "cuda": torch.version.cuda, "torch": torch.__version__, "triton": triton.__version__, "liger": liger,
        "python": platform.python_version(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def bench(args):
    results = []
    lat_empty = graph_time(lambda: kernels.empty_launch(torch.cuda.current_stream().cuda_stream), 2e-6)
    print(f"empty kernel: {lat_empty * 1e6:.2f} us per launch (graph)", flush=True)
    t0 = time.time()
    for op in args.ops:
        for dname in args.dtypes:
            dt = DTYPES[dname]
            for rows, h, shape in op_points(op, args, dt):
                ours, chain, cargs, liger, nbytes = make_group_norm(op, shape, dt) if shape else make_op(op, rows, h, dt)
                est = nbytes / 3.5e12 + 3e-6
                rec = {"op": op, "dtype": dname, "rows": rows, "hidden": h, "bytes": nbytes,
                       "variant": skip_norm.variant(KNAME[dname], *norm_kind(op), h, dname != "fp32", rows)
                       if op in NORM_OPS else None}
                if shape:
                    rec["shape"] = "x".join(map(str, shape))
                    rec["variant"] = group_norm.plan(shape[0], GN_GROUPS, shape[1] // GN_GROUPS * h, KNAME[dname])
                bad = checked(f"{op} {dname} {shape_of(rec)}", ours, chain, cargs)
                if bad:
                    rec["mismatch"] = bad
                rec["copy"] = copy_time(nbytes)
                rec["ours"] = graph_time(ours, est)
                rec["eager"] = graph_time(lambda: chain(*cargs), est * 3)
                rec["liger"] = graph_time(liger, est) if liger else None
                rec["compile"] = None
                if args.compile and (not args.compile_at or h in args.compile_at) and dname in args.compile_dtypes:
                    try:
                        tc = time.time()
                        cfn = compiled(chain, cargs)
                        rec["compile"] = graph_time(lambda: cfn(*cargs), est)
                        rec["compile_s"] = round(time.time() - tc, 1)
                    except Exception as e:  # noqa: BLE001
                        print(f"  torch.compile failed for {op} {dname} {rows}x{h}: {e}", flush=True)
                results.append(rec)
                del ours, chain, cargs, liger
                print(line(rec), flush=True)
            torch.cuda.empty_cache()
    print(f"bench took {time.time() - t0:.0f} s", flush=True)
    return {"env": env_info(), "empty_launch": lat_empty, "results": results}


def line(r):
    vs = "  ".join(f"vs {p} {r[p] / r['ours']:.2f}x" for p in ("compile", "liger") if r.get(p))
    return (f"{r['op']:16s} {r['dtype']} {shape_of(r):>14s} {r['bytes'] / 2**20:8.1f} MB  "
            f"ours {r['ours'] * 1e6:8.2f} us ({r['copy'] / r['ours'] * 100:5.1f}% copy)  {vs}")


def shape_of(r):
    return r.get("shape") or f"{r['rows']}x{r['hidden']}"


def norm_kind(op):
    """(norm, skip input) of a norm op."""
    return ("layer" if "layer" in op else "rms"), op.startswith("skip")


def sweep_group_norm(args, wrong: dict):
    """Every GroupNorm plan at each GN point (ours only): which one the plugin picks, which is best."""
    out = []
    for op in [o for o in args.ops if o in GN_OPS]:
        for dname in args.dtypes:
            dt, kname = DTYPES[dname], KNAME[dname]
            for shape in GN_SHAPES:
                size = shape[1] // GN_GROUPS * math.prod(shape[2:])
                nbytes = make_group_norm(op, shape, dt)[4]
                copy = copy_time(nbytes)
                times = {}
                for plan in group_norm.candidates(shape[0], GN_GROUPS, size, kname):
                    ours, chain, cargs = make_group_norm(op, shape, dt, plan=plan)[:3]
                    what = f"{op} {dname} {'x'.join(map(str, shape))} plan {plan}"
                    if not checked(what, ours, chain, cargs, wrong):
                        times[str(plan)] = graph_time(ours, nbytes / 3.5e12 + 3e-6)
                    del ours, chain, cargs
                chosen = str(group_norm.plan(shape[0], GN_GROUPS, size, kname))
                if chosen not in times:
                    continue
                best = min(times, key=times.get)
                out.append({"op": op, "dtype": dname, "shape": "x".join(map(str, shape)), "copy": copy,
                            "times": times, "chosen": chosen, "best": best})
                print(f"{op:16s} {dname} {'x'.join(map(str, shape)):14s} chosen {chosen} "
                      f"{copy / times[chosen] * 100:5.1f}%  best {best} {copy / times[best] * 100:5.1f}%  "
                      + " ".join(f"{v}:{copy / t * 100:.0f}" for v, t in times.items()), flush=True)
                torch.cuda.empty_cache()
    return out


def sweep(args, wrong: dict):
    """Every feasible variant of the norm kernels at each large point: which one the table picks
    (and every GroupNorm plan, sweep_group_norm). Variants whose output differs from the eager chain
    are not timed: they go to `wrong` (what -> mismatch line)."""
    out = sweep_group_norm(args, wrong)
    for op in [o for o in args.ops if o in NORM_OPS]:
        for dname in args.dtypes:
            dt, kname = DTYPES[dname], KNAME[dname]
            for rows, h in points(args, dt):
                nbytes = make_op(op, 2, h, dt)[4] - make_op(op, 1, h, dt)[4]  # per row, weights excluded
                copy = copy_time(nbytes * rows)
                times, fp32w = {}, {}  # 16-bit: with weights in the I/O dtype (what plugins run), and FP32 only
                chosen = skip_norm.variant(kname, *norm_kind(op), h, dname != "fp32", rows)
                weights = ((True, times), (False, fp32w)) if dname != "fp32" else ((False, times),)
                for v in skip_norm.candidates(kname, *norm_kind(op), h):
                    if args.looped_only and v != chosen and not (LOOP <= v & 15 < LOOP + 3 and v & HOIST):
                        continue
                    for io, into in weights[:1] if args.looped_only else weights:
                        ours, chain, cargs = make_op(op, rows, h, dt, variant=v, io_weights=io)[:3]
                        what = f"{op} {dname} {rows}x{h} variant {v}{'' if io else ' FP32 weights'}"
                        if not checked(what, ours, chain, cargs, wrong):
                            into[v] = graph_time(ours, nbytes * rows / 3.5e12)
                        del ours, chain, cargs
                if chosen not in times:
                    continue
                best = min(times, key=times.get)
                out.append({"op": op, "dtype": dname, "rows": rows, "hidden": h, "copy": copy, "times": times,
                            "chosen": chosen, "best": best, "fp32_weights": fp32w})
                w32 = f"(FP32 weights {copy / fp32w[chosen] * 100:5.1f}%)  " if chosen in fp32w else ""
                print(f"{op:16s} {dname} {rows:6d}x{h:<6d} chosen {chosen:3d} {copy / times[chosen] * 100:5.1f}%  "
                      f"{w32}best {best:3d} {copy / times[best] * 100:5.1f}%  "
                      + " ".join(f"{v}:{copy / t * 100:.0f}" for v, t in sorted(times.items())), flush=True)
                torch.cuda.empty_cache()
    return out


# --- report -------------------------------------------------------------------------------------


def fmt_us(t):
    return "" if t is None else f"{t * 1e6:.2f}"


def ratio(a, b):
    return "" if a is None or b is None else f"{a / b:.2f}x"


def write_report(data, out: Path, history: str):
    env, res, empty = data["env"], data["results"], data["empty_launch"]
    big = [r for r in res if r["rows"] > 64]
    small = [r for r in res if r["rows"] <= 64]
    L = ["# Kernel benchmark", "",
         f"GPU: {env['gpu']} ({env['sms']} SMs), driver {env['driver']}, CUDA {env['cuda']} (torch), torch {env['torch']}, "
         f"Triton {env.get('triton')}, Liger-Kernel {env.get('liger')}, Python {env['python']}; {env['date']}.", "",
         "Time per launch = median of CUDA-graph replays of back-to-back launches (warm-up first). "
         "% copy = time of a device-to-device copy of the same bytes (the faster of torch's copy_ and a Triton copy "
         "kernel) / our time. Speedups are peer time / our time.", "",
         "Peers: eager = the unfused PyTorch chain (x + b then F.gelu / clamp(relu); x (+ skip) then F.layer_norm; "
         "HF LLaMA's RMSNorm chain with FP32 statistics; F.group_norm, 32 groups, then F.silu; F.silu(a) * b; "
         "h * F.gelu(g, approximate='tanh') over x.chunk(2, -1)); compile = torch.compile(chain, dynamic=False, fullgraph=True, "
         "mode=\"max-autotune-no-cudagraphs\"), compiled afresh for each shape where its column has a value (compiles take 3-10 s each: the device "
         "time of a run decides how many; a compile that produced no graph fails the point rather than timing eager); liger = Liger-Kernel's forward (layer_norm_forward, "
         "rms_norm_forward casting 'llama', fused_add_rms_norm_forward, swiglu_forward, geglu_forward on the halves as two "
         "contiguous tensors). skip_rms_norm writes the sum too (all "
         "peers); skip_layer_norm does not.", "",
         f"Empty kernel (launch to completion, in a graph): {empty * 1e6:.2f} us.", ""]
    L += ["## Targets", ""] + targets(big, small) + [""]
    L += ["## Large points (x >= 96 MiB; GroupNorm: the N x C x H x W shapes, 5-168 MB; gated: rows x I, I the output width)", "",
          "| op | dtype | shape | MB | ours us | % copy | vs eager | vs compile | vs liger |", "|---|---|---|---|---|---|---|---|---|"]
    for r in big:
        L.append(f"| {r['op']} | {r['dtype']} | {shape_of(r)} | {r['bytes'] / 2**20:.0f} | {fmt_us(r['ours'])} | "
                 f"{r['copy'] / r['ours'] * 100:.1f} | {ratio(r['eager'], r['ours'])} | {ratio(r['compile'], r['ours'])} | "
                 f"{ratio(r['liger'], r['ours'])} |")
    L += ["", "## Small launches (device time in graphs)", "",
          "| op | dtype | shape | ours us | eager us | compile us | liger us | vs compile |", "|---|---|---|---|---|---|---|---|"]
    for r in small:
        L.append(f"| {r['op']} | {r['dtype']} | {r['rows']}x{r['hidden']} | {fmt_us(r['ours'])} | {fmt_us(r['eager'])} | "
                 f"{fmt_us(r['compile'])} | {fmt_us(r['liger'])} | {ratio(r['compile'], r['ours'])} |")
    L += ["", history.strip() if history else "## History\n\n(none yet)", ""]
    (out / "RESULTS.md").write_text("\n".join(L))


def targets(big, small):
    def stat(rs, peer):
        v = sorted(r[peer] / r["ours"] for r in rs if r.get(peer))
        return v and (statistics.median(v), v[0], sum(x >= 0.98 for x in v), len(v))

    L = []
    even = [r for r in big if not odd(r)]
    for op in dict.fromkeys(r["op"] for r in big):
        rs = [r for r in even if r["op"] == op]
        cp = sorted(r["copy"] / r["ours"] for r in rs)
        parts = [f"copy median {statistics.median(cp) * 100:.0f}% min {cp[0] * 100:.0f}%"] if cp else []
        for peer in ("compile", "liger"):
            s = stat(rs, peer)
            if s:
                parts.append(f"vs {peer} median {s[0]:.2f}x min {s[1]:.2f}x ({s[2]}/{s[3]} points >= 0.98x)")
        odds = [r["copy"] / r["ours"] * 100 for r in big if r["op"] == op and odd(r)]
        if odds:
            parts.append(f"odd hidden {min(odds):.0f}-{max(odds):.0f}% copy")
        L.append(f"- {op}: " + "; ".join(parts))
    sm = [r for r in small if r.get("compile")]
    if sm:
        L.append(f"- small launches (1-64 rows): ours <= compile at {sum(r['ours'] <= r['compile'] for r in sm)}/{len(sm)} "
                 f"points; ours {min(r['ours'] for r in sm) * 1e6:.1f}-{max(r['ours'] for r in sm) * 1e6:.1f} us")
    return L


def odd(r):
    """A point of an odd hidden size (of the ops timed over HIDDENS and ODD)."""
    return r["op"] not in GATED_OPS and r["hidden"] not in HIDDENS


def plot(data, out: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = [r for r in data["results"] if r["rows"] > 64]
    if not res:  # small points only: nothing to plot
        return
    names = list(dict.fromkeys(r["op"] for r in res))
    dts = list(dict.fromkeys(r["dtype"] for r in res))
    fig, axes = plt.subplots(len(names), len(dts), figsize=(5 * len(dts), 3.0 * len(names)), squeeze=False)
    for i, op in enumerate(names):
        for j, d in enumerate(dts):
            ax = axes[i][j]
            pts = sorted((r for r in res if r["op"] == op and r["dtype"] == d), key=lambda r: r["hidden"])
            for key, style, color in (("ours", "o-", "C0"), ("eager", "s--", "C1"), ("compile", "D-", "C2"),
                                      ("liger", "^-", "C3")):
                for is_odd in (False, True):  # odd hidden sizes: unconnected crosses
                    sel = [r for r in pts if r.get(key) and odd(r) == is_odd]
                    if sel:
                        ax.plot([r["hidden"] for r in sel], [r["copy"] / r[key] * 100 for r in sel],
                                "x" if is_odd else style, color=color, label=None if is_odd else key,
                                markersize=4 if is_odd else 3)
            ax.axhline(100, color="gray", lw=0.8)
            ax.set_xscale("log", base=2)
            ax.set_ylim(0, 110)
            ax.set_title(f"{op} {d}", fontsize=9)
            ax.set_ylabel("% of copy bandwidth", fontsize=8)
            ax.set_xlabel("hidden (x >= 96 MiB; crosses: odd sizes)", fontsize=8)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "bandwidth.png", dpi=80)


def old_history(path: Path) -> str:
    if not path.is_file():
        return ""
    text = path.read_text()
    i = text.find("## History")
    return text[i:] if i >= 0 else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("benchmarks"))
    ap.add_argument("--ops", nargs="+", default=list(OPS), choices=OPS)
    ap.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=list(DTYPES))
    ap.add_argument("--hiddens", nargs="*", type=int, default=list(HIDDENS))
    ap.add_argument("--odd", nargs="*", type=int, default=list(ODD))
    ap.add_argument("--no-small", dest="small", action="store_false")
    ap.add_argument("--no-compile", dest="compile", action="store_false")
    ap.add_argument("--compile-at", nargs="*", type=int, default=[], metavar="HIDDEN",
                    help="compile the peer only at these hidden sizes (default: every point)")
    ap.add_argument("--compile-dtypes", nargs="*", default=list(DTYPES), choices=list(DTYPES))
    ap.add_argument("--sweep", action="store_true", help="time every norm kernel variant and GroupNorm plan (ours only)")
    ap.add_argument("--looped-only", action="store_true", help="--sweep: only the picked variant and the looped ones that prefetch their rows, "
                    "16-bit weights only")
    ap.add_argument("--merge-into", type=Path, default=None, metavar="RESULTS_JSON",
                    help="time only the selected points and replace them in this results.json (the rest is kept)")
    ap.add_argument("--report-only", type=Path, default=None, metavar="RESULTS_JSON",
                    help="rewrite RESULTS.md and bandwidth.png from a results.json, timing nothing")
    ap.add_argument("--history", type=Path, default=None, help="markdown whose '## History' section is kept "
                    "(default: the existing OUT/RESULTS.md, else benchmarks/RESULTS.md)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.sweep:
        wrong = {}
        (args.out / "sweep.json").write_text(json.dumps(sweep(args, wrong), indent=1))
        if wrong:
            sys.exit(f"{len(wrong)} variants differ from the eager chain (not timed): " + "; ".join(wrong))
        return
    hist_src = args.history or (args.out / "RESULTS.md" if (args.out / "RESULTS.md").is_file()
                                else Path(__file__).resolve().parents[1] / "benchmarks" / "RESULTS.md")
    history = old_history(hist_src)
    if args.report_only:
        data = json.loads(args.report_only.read_text())
    else:
        data = bench(args)
        if args.merge_into:
            old = json.loads(args.merge_into.read_text())
            key = lambda r: (r["op"], r["dtype"], r["rows"], r["hidden"])  # noqa: E731
            new = {key(r): r for r in data["results"]}
            data["results"] = [new.pop(key(r), r) for r in old["results"]] + list(new.values())
        (args.out / "results.json").write_text(json.dumps(data, indent=1))
    write_report(data, args.out, history)
    try:
        plot(data, args.out)
    except ImportError as e:
        print(f"no plot ({e}); install matplotlib for bandwidth.png")
    print("\n".join(targets([r for r in data["results"] if r["rows"] > 64], [r for r in data["results"] if r["rows"] <= 64])))
    print(f"wrote {args.out}/RESULTS.md (+ results.json, bandwidth.png when timed / matplotlib present)")
    wrong = [f"{r['op']} {r['dtype']} {shape_of(r)}" for r in data["results"] if r.get("mismatch")]
    if wrong:
        sys.exit(f"ours differs from the eager chain at {len(wrong)} points: " + "; ".join(wrong))


if __name__ == "__main__":
    main()
