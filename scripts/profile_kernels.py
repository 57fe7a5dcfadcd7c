#!/usr/bin/env python3
"""Nsight Compute numbers for norm benchmark points: per point, the kernel our launch runs, its
duration, DRAM throughput (% of peak), theoretical and achieved occupancy, registers and the main
warp stall reasons (cycles per issued instruction). By default the large points of a results.json
that miss a target of the kernel-speed issue (< 0.98x a peer, or < 88% of copy).

One ncu process runs every point once (ncu isolates each kernel: caches flushed, clocks locked, so
no warm-up is needed); the report is exported, then read back as CSV.

  python3 scripts/profile_kernels.py --results benchmarks/results.json --out benchmarks
  python3 scripts/profile_kernels.py --points layer_norm:fp16:12288x4096 rms_norm:bf16:3072x16384 --out DIR
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

KERNELS = "regex:rowKernel|longRowKernel"
SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats")
STALL = "smsp__average_warps_issue_stalled_"
STALL_END = "_per_issue_active.ratio"
COLUMNS = {  # raw metric -> table column
    "gpu__time_duration.sum": "us",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "DRAM %",
    "sm__maximum_warps_per_active_cycle_pct": "occupancy % (theory)",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy % (achieved)",
    "launch__registers_per_thread": "registers",
    "launch__block_size": "threads",
    "launch__grid_size": "blocks",
}
NORM_OPS = ("layer_norm", "skip_layer_norm", "rms_norm", "skip_rms_norm")


def missed(results: dict) -> list[str]:
    """Large norm points below 0.98x a peer that has a time, or below 88% of copy."""
    out = []
    for r in results["results"]:
        if r["op"] not in NORM_OPS or r["rows"] <= 64:
            continue
        behind = any(r.get(p) and r[p] / r["ours"] < 0.98 for p in ("compile", "liger"))
        if behind or r["copy"] / r["ours"] < 0.88:
            out.append(f"{r['op']}:{r['dtype']}:{r['rows']}x{r['hidden']}")
    return out


def parse_point(p: str) -> tuple[str, str, int, int]:
    try:
        op, dtype, shape = p.split(":")
        rows, hidden = (int(v) for v in shape.split("x"))
    except ValueError:
        raise SystemExit(f"bad point {p!r}: expected op:dtype:ROWSxHIDDEN")
    if op not in NORM_OPS:
        raise SystemExit(f"bad point {p!r}: op must be one of {', '.join(NORM_OPS)}")
    return op, dtype, rows, hidden


def child(points: list[str]) -> None:
    """Runs each point's launch once (what ncu profiles)."""
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_kernels as bk

    for p in points:
        op, dtype, rows, hidden = parse_point(p)
        ours = bk.make_op(op, rows, hidden, bk.DTYPES[dtype])[0]
        ours()
        torch.cuda.synchronize()
        del ours
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


def table(recs: list[dict]) -> str:
    cols = ["point", "kernel"] + list(COLUMNS.values()) + ["top stalls (cycles per issued instruction)"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in recs:
        fmt = lambda v: "" if v is None else f"{v:.1f}" if isinstance(v, float) else str(v)  # noqa: E731
        stalls = ", ".join(f"{k} {v:.1f}" for k, v in r["stalls"].items())
        lines.append("| " + " | ".join([r["point"], r["kernel"]] + [fmt(r[c]) for c in COLUMNS.values()] + [stalls]) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", type=Path, help="profile the points of this results.json that miss a target")
    ap.add_argument("--points", nargs="*", default=[], help="op:dtype:ROWSxHIDDEN (fp32, fp16, bf16)")
    ap.add_argument("--out", type=Path, default=Path("benchmarks"))
    ap.add_argument("--ncu", default="ncu")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    points = list(args.points)
    if args.results:
        try:
            points += missed(json.loads(args.results.read_text()))
        except (OSError, ValueError, KeyError) as e:
            raise SystemExit(f"cannot read {args.results}: {e}")
    for p in points:
        parse_point(p)
    if args.child:
        return child(points)
    if not points:
        raise SystemExit("no points: give --results or --points")
    args.out.mkdir(parents=True, exist_ok=True)
    rep = args.out / "ncu_norms.ncu-rep"
    cmd = [args.ncu, "--force-overwrite", "--export", str(rep), "--kernel-name", KERNELS]
    cmd += [a for s in SECTIONS for a in ("--section", s)]
    cmd += [sys.executable, str(Path(__file__).resolve()), "--child", "--points", *points]
    subprocess.run(cmd, check=True)
    text = subprocess.run([args.ncu, "--import", str(rep), "--csv", "--page", "raw"], check=True,
                          capture_output=True, text=True).stdout
    recs = summarize(points, *rows_of(text))
    (args.out / "ncu_norms.json").write_text(json.dumps(recs, indent=1))
    (args.out / "ncu_norms.md").write_text("# Nsight Compute, norm points\n\n" + table(recs) + "\n")
    print(table(recs))


if __name__ == "__main__":
    main()
