#!/usr/bin/env python3
"""Nsight Compute numbers for norm and bias+activation benchmark points: per point, the kernel our
launch runs, its duration, DRAM throughput (% of peak), theoretical and achieved occupancy, registers
and the main warp stall reasons (cycles per issued instruction). By default the points of a
results.json that miss a target of the kernel-speed issue: large points below 0.98x a peer or 88%
of copy, small launches (<= 64 rows) slower than the compiled chain.

One ncu process runs every point once (ncu isolates each kernel: caches flushed, clocks locked, so
no warm-up is needed); the report is exported, then read back as CSV. With --results each row also
shows the benchmark's numbers; with --sweep (bench_kernels.py --sweep's sweep.json) the designs
measured there: the variant picked, the best other variants and the picked one with FP32 weights.

  python3 scripts/profile_kernels.py --results benchmarks/results.json --sweep DIR/sweep.json --out benchmarks
  # the table again from an earlier run's ncu numbers (no GPU), with earlier designs' results.json:
  python3 scripts/profile_kernels.py --ncu-json benchmarks/ncu_norms.json --results benchmarks/results.json \
      --sweep benchmarks/sweep_norms.json --earlier v6=OLD/results.json --out benchmarks
  # ncu on the large points that miss, the small ones' numbers from an earlier run:
  python3 scripts/profile_kernels.py --results benchmarks/results.json --large-only --ncu-json benchmarks/ncu_norms.json \
      --sweep DIR/sweep.json --out DIR
  python3 scripts/profile_kernels.py --points layer_norm:fp16:12288x4096 rms_norm:bf16:3072x16384 --out DIR
  # a forced variant, or a peer's kernel (the max-autotune compile, Liger-Kernel) at the same point:
  python3 scripts/profile_kernels.py --points layer_norm:fp16:12288x4096:v70 layer_norm:fp16:12288x4096:compile --out DIR

Only the launch of each point is profiled (an NVTX range): a compiled peer's autotuning is not. With
compiled peers a first pass without ncu fills Inductor's cache (its source and chosen configs are
printed), so the profiled process loads the kernel instead of autotuning it again.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import subprocess
import sys
import time
from pathlib import Path

RANGE = "profiled"  # the NVTX range around each point's launch (ncu --nvtx-include)
SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats")
STALL = "smsp__average_warps_issue_stalled_"
STALL_END = "_per_issue_active.ratio"
COLUMNS = {  # raw metric -> table column
    "gpu__time_duration.sum": "us",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": "DRAM %",
    "sm__maximum_warps_per_active_cycle_pct": "occupancy % (theory)",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy % (achieved)",
    "launch__registers_per_thread": "registers",
    "launch__block_size": "threads",
    "launch__grid_size": "blocks",
}
NORM_OPS = ("layer_norm", "skip_layer_norm", "rms_norm", "skip_rms_norm")
OPS = NORM_OPS + ("bias_gelu", "bias_relu6")
PACKS = (1, 2, 3, 4, 6, 8)  # 16-byte packs per thread by variant index (skip_norm.cu kNvs)


def describe(v: int) -> str:
    """A SkipNorm kernel variant (skip_norm.cu encode()) in words: path, packs per thread, prefetch,
    weights loaded before the reductions."""
    if v > 255:  # past the bit-encoded variants: the named ones (kernels.enums()["skip_norm_variant"])
        return "Triton AOT"
    if v & 15 == 15:
        return "long" + ("" if v & 64 else " scalar")
    if 6 <= v & 15 <= 8:  # the looped path (kLoop)
        return ("looped warp" if v & 16 else f"looped {128 << ((v & 15) - 6)}") + (" own-row L2 prefetch" if v & 32 else "") \
            + (" next-row L2 prefetch" if v & 128 else "")
    kind = "warp" if v & 16 else "block"
    return (f"{kind} x{PACKS[v & 15] if v & 15 < len(PACKS) else '?'}" + (" prefetch" if v & 128 else "")
            + (" hoisted weights" if v & 32 else ""))


def key(r: dict) -> str:
    return f"{r['op']}:{r['dtype']}:{r['rows']}x{r['hidden']}"


LEGEND = """# Nsight Compute, points that miss a target

Per point (op:dtype:ROWSxHIDDEN): the benchmark's % of copy and speed against max-autotune compile and
Liger-Kernel (peer time / ours); the kernel our launch runs and its Nsight Compute numbers (one launch,
caches flushed, clocks locked: `us` is not the benchmark's time); the designs the variant sweep
measured at that point (% of copy: the variant picked, the two best others, the picked one with FP32
weights instead of 16-bit copies); the same point's % of copy in earlier designs' benchmark runs.
Written by `scripts/profile_kernels.py`.

"""


def missed(results: dict) -> list[str]:
    """Large points below 0.98x a peer that has a time or below 88% of copy; small launches (<= 64
    rows) slower than the compiled chain."""
    out = []
    for r in results["results"]:
        if r["op"] not in OPS:
            continue
        if r["rows"] <= 64:
            behind = bool(r.get("compile")) and r["ours"] > r["compile"]
        else:
            behind = any(r.get(p) and r[p] / r["ours"] < 0.98 for p in ("compile", "liger"))
            behind = behind or r["copy"] / r["ours"] < 0.88
        if behind:
            out.append(key(r))
    return out


def bench_cols(r: dict | None) -> dict:
    """The benchmark's numbers of a point: % of copy, compile and Liger time / ours."""
    if not r:
        return {}
    vs = lambda p: r[p] / r["ours"] if r.get(p) else None  # noqa: E731
    return {"% copy": 100 * r["copy"] / r["ours"], "vs compile": vs("compile"), "vs liger": vs("liger")}


def designs(s: dict | None, chosen: int | None = None, others: int = 2) -> str:
    """% of copy of the variant picked (`chosen`, else the sweep's), the best `others` variants besides
    it, and the picked one with FP32 weights (a sweep.json point)."""
    if not s:
        return ""
    pct = lambda t: 100 * s["copy"] / t  # noqa: E731
    times = {int(v): t for v, t in s["times"].items()}
    chosen = int(s["chosen"] if chosen is None else chosen)
    parts = [f"picked {describe(chosen)}: {pct(times[chosen]):.0f}"] if chosen in times else []
    rest = sorted((t, v) for v, t in times.items() if v != chosen)[:others]
    parts += [f"{describe(v)}: {pct(t):.0f}" for t, v in rest]
    fp32w = {int(v): t for v, t in (s.get("fp32_weights") or {}).items()}
    if chosen in fp32w:
        parts.append(f"picked, FP32 weights: {pct(fp32w[chosen]):.0f}")
    return "; ".join(parts)


def parse_point(p: str) -> tuple[str, str, int, int, str]:
    """op:dtype:ROWSxHIDDEN[:WHO] -> (op, dtype, rows, hidden, who); who: ours, vN (variant N forced),
    compile or liger."""
    try:
        op, dtype, shape, *rest = p.split(":")
        rows, hidden = (int(v) for v in shape.split("x"))
        who = rest[0] if rest else "ours"
        if len(rest) > 1 or not (who in ("ours", "compile", "liger") or who[0] == "v" and who[1:].isdigit()):
            raise ValueError
    except ValueError:
        raise SystemExit(f"bad point {p!r}: expected op:dtype:ROWSxHIDDEN[:ours|vN|compile|liger]")
    if op not in OPS:
        raise SystemExit(f"bad point {p!r}: op must be one of {', '.join(OPS)}")
    return op, dtype, rows, hidden, who


def child(points: list[str]) -> None:
    """Runs each point's launch once inside the NVTX range ncu profiles (a compiled peer compiled first)."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_ops as bk
    from bench_timing import compiled, inductor_cache

    for p in points:
        op, dtype, rows, hidden, who = parse_point(p)
        ours, chain, cargs, liger, _ = bk.make_op(op, rows, hidden, bk.DTYPES[dtype],
                                                  variant=int(who[1:]) if who[0] == "v" else -1)
        if who == "compile":
            start = time.time() - 1
            cfn = compiled(chain, cargs)
            fn = lambda: cfn(*cargs)  # noqa: E731
            for f in Path(inductor_cache()).rglob("*.best_config"):  # the autotuner's picks for this point
                if f.stat().st_mtime >= start:
                    print(f"{p}: {f.name}: {f.read_text().strip()}", flush=True)
        elif who == "liger":
            if not liger:
                raise SystemExit(f"{p}: Liger-Kernel has no such op here (or is not installed)")
            fn = liger
        else:
            fn = ours
        fn()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push(RANGE)
        fn()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        del ours, chain, cargs, liger, fn
        torch.cuda.empty_cache()


def rows_of(csv_text: str) -> tuple[list[dict], dict]:
    """ncu's raw page: a header, a units row, then one row per profiled kernel -> (rows, units)."""
    lines = [ln for ln in csv_text.splitlines() if ln.startswith('"')]
    table = list(csv.DictReader(io.StringIO("\n".join(lines))))
    units = next((r for r in table if not r.get("ID", "").strip()), {})
    return [r for r in table if r.get("ID", "").strip().isdigit()], units


def number(v: str) -> float | None:
    try:
        return float(v.replace(",", ""))
    except (AttributeError, ValueError):
        return None


def summarize(points: list[str], rows: list[dict], units: dict) -> list[dict]:
    if len(rows) != len(points):
        raise SystemExit(f"ncu profiled {len(rows)} kernels for {len(points)} points")
    out = []
    for p, r in zip(points, rows):
        rec = {"point": p, "kernel": r.get("Kernel Name", "").split("(")[0]}
        for metric, col in COLUMNS.items():
            rec[col] = number(r.get(metric, ""))
        scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(units.get("gpu__time_duration.sum"), 1.0)
        rec["us"] = None if rec["us"] is None else rec["us"] * scale
        stalls = {k[len(STALL):-len(STALL_END)]: number(v) for k, v in r.items()
                  if k.startswith(STALL) and k.endswith(STALL_END) and number(v)}
        rec["stalls"] = dict(sorted(stalls.items(), key=lambda kv: -kv[1])[:3])
        out.append(rec)
    return out


def earlier(p: str, runs: dict[str, dict]) -> str:
    """% of copy of point p in earlier designs' results (label -> {point: record})."""
    return "; ".join(f"{label}: {100 * r['copy'] / r['ours']:.0f}" for label, res in runs.items()
                     if (r := res.get(p)) and r.get("ours"))


def table(recs: list[dict]) -> str:
    extra = [c for c in ("% copy", "vs compile", "vs liger") if any(r.get(c) is not None for r in recs)]
    cols = ["point"] + extra + ["kernel"] + list(COLUMNS.values()) + ["top stalls (cycles per issued instruction)"]
    with_designs = any(r.get("designs") for r in recs)
    cols += ["designs, % of copy (sweep)"] if with_designs else []
    with_earlier = any(r.get("earlier") for r in recs)
    cols += ["earlier designs, % of copy"] if with_earlier else []
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in recs:
        fmt = lambda v: "" if v is None else f"{v:.1f}" if isinstance(v, float) else str(v)  # noqa: E731
        ratio = lambda v: "" if v is None else f"{v:.2f}x"  # noqa: E731
        stalls = ", ".join(f"{k} {v:.1f}" for k, v in r["stalls"].items())
        cells = [r["point"]] + [ratio(r.get(c)) if c.startswith("vs") else fmt(r.get(c)) for c in extra]
        cells += [r["kernel"]] + [fmt(r[c]) for c in COLUMNS.values()] + [stalls]
        cells += [r.get("designs", "")] if with_designs else []
        cells += [r.get("earlier", "")] if with_earlier else []
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def profile(ncu: str, points: list[str], out: Path) -> list[dict]:
    """One ncu process over every point's launch; its report read back as CSV."""
    rep = out / "ncu_norms.ncu-rep"
    run = [sys.executable, str(Path(__file__).resolve()), "--child", "--points"]
    if any(parse_point(p)[4] == "compile" for p in points):  # compile and autotune outside ncu first
        subprocess.run(run + points, check=True)
    cmd = [ncu, "--force-overwrite", "--export", str(rep), "--nvtx", "--nvtx-include", f"{RANGE}/"]
    cmd += [a for s in SECTIONS for a in ("--section", s)]
    subprocess.run(cmd + run + points, check=True)
    text = subprocess.run([ncu, "--import", str(rep), "--csv", "--page", "raw"], check=True,
                          capture_output=True, text=True).stdout
    return summarize(points, *rows_of(text))


def read_json(path: Path, pick):
    try:
        return pick(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"cannot read {path}: {e}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", type=Path, help="profile the points of this results.json that miss a target")
    ap.add_argument("--points", nargs="*", default=[], help="op:dtype:ROWSxHIDDEN (fp32, fp16, bf16)")
    ap.add_argument("--sweep", type=Path, nargs="*", default=[],
                    help="bench_kernels.py --sweep's sweep.json files: the designs of each point (a later file's wins)")
    ap.add_argument("--out", type=Path, default=Path("benchmarks"))
    ap.add_argument("--ncu", default="ncu")
    ap.add_argument("--ncu-json", type=Path, help="an earlier run's ncu_norms.json: its points and ncu numbers (no ncu run)")
    ap.add_argument("--large-only", action="store_true", help="--results: run ncu on the large points that miss "
                    "only; the small ones keep --ncu-json's numbers")
    ap.add_argument("--earlier", nargs="*", default=[], metavar="LABEL=RESULTS_JSON",
                    help="results.json of earlier designs: their %% of copy per point")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    points = list(args.points)
    bench, sweep, wanted = {}, {}, []
    if args.results:
        results = read_json(args.results, lambda d: d["results"])
        wanted = missed({"results": results})
        points += [p for p in wanted if not args.large_only or parse_point(p)[2] > 64]
        bench = {key(r): r for r in results}
    for path in args.sweep:  # GroupNorm entries have a shape, not rows
        sweep.update({key(r): r for r in read_json(path, lambda d: [r for r in d if "rows" in r])})
    runs = {}
    for e in args.earlier:
        label, sep, path = e.partition("=")
        if not sep or not label:
            raise SystemExit(f"bad --earlier {e!r}: expected LABEL=RESULTS_JSON")
        runs[label] = {key(r): r for r in read_json(Path(path), lambda d: d["results"]) if "rows" in r}
    for p in points:
        parse_point(p)
    if args.child:
        return child(points)
    args.out.mkdir(parents=True, exist_ok=True)
    if not points and not args.ncu_json:
        raise SystemExit("no points: give --results, --points or --ncu-json")
    recs = []
    if points and (args.large_only or not args.ncu_json):
        recs = profile(args.ncu, points, args.out)
    if args.ncu_json:  # an earlier run's numbers for the points not profiled now (with --results: that still miss)
        keep, done = ("point", "kernel", "stalls", *COLUMNS.values()), {r["point"] for r in recs}
        recs += [{k: r.get(k) for k in keep} for r in read_json(args.ncu_json, list)
                 if r["point"] not in done and (not wanted or r["point"] in wanted)]
        order = {p: i for i, p in enumerate(wanted or points)}
        recs.sort(key=lambda r: order.get(r["point"], len(order)))
    for r in recs:
        b = bench.get(r["point"]) or {}
        r.update(bench_cols(b), designs=designs(sweep.get(r["point"]), b.get("variant")),
                 earlier=earlier(r["point"], runs))
    (args.out / "ncu_norms.json").write_text(json.dumps(recs, indent=1))
    (args.out / "ncu_norms.md").write_text(LEGEND + table(recs) + "\n")
    print(table(recs))


if __name__ == "__main__":
    main()
