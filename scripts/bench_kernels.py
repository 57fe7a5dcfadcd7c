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
import json
import math
import platform
import subprocess
import sys
import time
from pathlib import Path

from bench_points import GN_GROUPS, GN_OPS, GN_SHAPES, HIDDENS, HOIST, KNAME, LOOP, NORM_OPS, ODD, OPS
from bench_report import kept_sections, plot, shape_of, targets, write_report

try:  # what a run needs; --help works without it
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from trtplugins import kernels
    from trtplugins.ops import group_norm, skip_norm
    from bench_ops import DTYPES, _liger, make_group_norm, make_op, op_points, points, with_sum
    from bench_timing import checked, compiled, copy_time, graph_time
except ImportError as e:
    MISSING = e
else:
    MISSING = None

# --- main ---------------------------------------------------------------------------------------


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
                       "variant": skip_norm.variant(KNAME[dname], *norm_kind(op), h, dname != "fp32", rows, output_sum=with_sum(op))
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
                chosen = skip_norm.variant(kname, *norm_kind(op), h, dname != "fp32", rows, output_sum=with_sum(op))
                weights = ((True, times), (False, fp32w)) if dname != "fp32" else ((False, times),)
                for v in skip_norm.candidates(kname, *norm_kind(op), h, output_sum=with_sum(op)):
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("benchmarks"))
    ap.add_argument("--ops", nargs="+", default=list(OPS), choices=OPS)
    ap.add_argument("--dtypes", nargs="+", default=list(KNAME), choices=list(KNAME))
    ap.add_argument("--hiddens", nargs="*", type=int, default=list(HIDDENS))
    ap.add_argument("--odd", nargs="*", type=int, default=list(ODD))
    ap.add_argument("--no-small", dest="small", action="store_false")
    ap.add_argument("--no-compile", dest="compile", action="store_false")
    ap.add_argument("--compile-at", nargs="*", type=int, default=[], metavar="HIDDEN",
                    help="compile the peer only at these hidden sizes (default: every point)")
    ap.add_argument("--compile-dtypes", nargs="*", default=list(KNAME), choices=list(KNAME))
    ap.add_argument("--sweep", action="store_true", help="time every norm kernel variant and GroupNorm plan (ours only)")
    ap.add_argument("--looped-only", action="store_true", help="--sweep: only the picked variant and the looped ones that prefetch their rows, "
                    "16-bit weights only")
    ap.add_argument("--merge-into", type=Path, default=None, metavar="RESULTS_JSON",
                    help="time only the selected points and replace them in this results.json (the rest is kept)")
    ap.add_argument("--report-only", type=Path, default=None, metavar="RESULTS_JSON",
                    help="rewrite RESULTS.md and bandwidth.png from a results.json, timing nothing")
    ap.add_argument("--history", type=Path, default=None, help="a RESULTS.md whose sections past the generated "
                    "tables (the per-op runs, History, ...) the report keeps (default: OUT/RESULTS.md's, "
                    "where it exists)")
    args = ap.parse_args()
    if MISSING is not None and not args.report_only:
        sys.exit(f"error: the benchmark needs torch with CUDA and the kernel library: {MISSING}")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.sweep:
        wrong = {}
        (args.out / "sweep.json").write_text(json.dumps(sweep(args, wrong), indent=1))
        if wrong:
            sys.exit(f"{len(wrong)} variants differ from the eager chain (not timed): " + "; ".join(wrong))
        return
    history = kept_sections(args.history or args.out / "RESULTS.md")
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
