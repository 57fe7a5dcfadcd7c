#!/usr/bin/env python3
"""A/B of kernel patches on the GPU machine, in one call and one order: build the kernels library of
the tree as it is ("base") and of each patch set, run scripts/bench_kernels.py (--bench group_norm:
scripts/bench_group_norm.py, timing only ours and the forced plans, GN_COLUMNS, unless its arguments say --only) with
the same arguments against each (and each value of --env), then print our time per point side by side.

  python3 benchmarks/experiments/ab.py NAME -- --ops bias_gelu bias_relu6 --hiddens --odd --no-compile
  python3 benchmarks/experiments/ab.py --no-base --sweep-build loop_rows_ahead \\
      --env TRTPLUGINS_AHEAD=0,2048,8192 -- --sweep --looped-only --ops layer_norm --no-small

A patch set is NAME (benchmarks/experiments/NAME.patch, or $AB_PATCHES/NAME.patch) or NAME+NAME. Each is applied to a copy of
the tree (so a patch may touch the scripts too) and built there, all at once (sm_90 unless
TRTPLUGINS_CUDA_ARCHS says otherwise). Runs go base, A, B, ... and back (B, A, base) with --repeat 2,
so a drift of the GPU's clocks does not favour one side; the table takes the median per point of our
time (in a --sweep run: of the fastest variant, which the pick table could take).
Output: $OUT/ab-TAG.json (every run's results.json or sweep.json, the tails of failed runs' logs,
the table) and $OUT/ab-TAG.txt (the table): two files, since the device returns at most 8; $OUT
defaults to build/. Trees, builds and runs go to $AB_WORK (default build/ab). Exits non-zero when
a patch does not apply, a build fails or a run fails (a run that finds a kernel differing from the
eager chain fails: bench_kernels.py checks before it times).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PATCHES = Path(os.environ.get("AB_PATCHES", HERE))  # where NAME.patch is looked for (tests: elsewhere)
# Built, checked statically, not yet run on the device (RESULTS.md, "Targets still missed"): CI checks they apply.
PENDING: tuple[str, ...] = ("gn_registers_anywhere", "gn_registers_anywhere+gn_registers_add", "gn_no_prefetch",
                             "gn_no_prefetch+gn_walk32",
                             "gn_no_prefetch+gn_walk32+gn_fold_add",
                             "gn_no_prefetch+gn_walk32+gn_fold_add+gn_cl_one_group", "gn_stage_prefetch",
                             "gn_stage_prefetch+gn_prefetch_stream")
# sets the queue applies to measure, never to land (queued.sh gntime: the phases' timer stamps)
TOOLS: tuple[str, ...] = ("gn_timeline",)
BENCHES = {"kernels": "bench_kernels.py", "group_norm": "bench_group_norm.py"}
GN_COLUMNS = ("ours_cl", "ours_cf", "resident_cf_whole", "resident_cf_c2", "resident_cl_whole",  # ours, and the
              "resident_cl_windows")  # forced plans
TOP_SKIP = shutil.ignore_patterns(".git", "build", "build-*", ".cache", ".whl", ".trt", ".venv*")  # the root's own
ANY_SKIP = shutil.ignore_patterns("*.so", "__pycache__")


def skip(folder: str, names: list[str]) -> set[str]:
    """What the tree's copy leaves out: build outputs and fetched material (trtplugins/engine/ is source)."""
    return ANY_SKIP(folder, names) | (TOP_SKIP(folder, names) if Path(folder) == ROOT else set())


def with_columns(bench: str, bench_args: list[str]) -> list[str]:
    """The benchmark's arguments: the GroupNorm table times only the columns an A/B compares (GN_COLUMNS: ours and
    the forced plans, no peer) unless they name their own (--only)."""
    if bench != "group_norm" or "--only" in bench_args:
        return bench_args
    return [*bench_args, "--only", *GN_COLUMNS]


def patches(name: str) -> list[Path]:
    """The patch files of a set 'a+b', each checked to exist."""
    files = [PATCHES / f"{p}.patch" for p in name.split("+")]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        sys.exit(f"ab: no such patch: {', '.join(missing)}")
    return files


def apply_diff(diff: str, tree: Path) -> str | None:
    """Apply a unified diff (git's a/ b/ paths) to the files under tree: every hunk's context and removed
    lines must match exactly, anywhere in the file (an offset, no fuzz). None, or why it does not apply.
    (The GPU machine has no `patch` or `git apply` to rely on.) Files are written only if all hunks apply."""
    out: dict[Path, list[str]] = {}
    lines = diff.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        if not (lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")):
            i += 1
            continue
        name = lines[i + 1][4:].split("\t")[0].strip()
        path = tree / (name[2:] if name.startswith("b/") else name)
        new = lines[i][4:].strip() == "/dev/null"
        text = out.get(path) or ([] if new else path.read_text().splitlines(keepends=True) if path.is_file() else None)
        if text is None:
            return f"{name}: no such file"
        i += 2
        while i < len(lines) and lines[i].startswith("@@"):
            start = int(lines[i].split()[1].split(",")[0][1:])
            old, rep, prev = [], [], " "
            i += 1
            while i < len(lines) and lines[i][:1] in (" ", "-", "+", "\\") and not lines[i].startswith("--- "):
                tag, body = lines[i][:1], lines[i][1:]
                if tag == "\\":  # "no newline at end of file": the line before has none
                    for seq in (old, rep) if prev == " " else (old,) if prev == "-" else (rep,):
                        seq[-1] = seq[-1].rstrip("\n")
                else:
                    if tag in " -":
                        old.append(body)
                    if tag in " +":
                        rep.append(body)
                    prev = tag
                i += 1
            at = [k for k in range(len(text) - len(old) + 1) if text[k:k + len(old)] == old]
            if not at:
                return f"{name}: a hunk at line {start} does not match"
            k = min(at, key=lambda k: abs(k + 1 - start))
            text[k:k + len(old)] = rep
        out[path] = text
    if not out:
        return "no file in the diff"
    for path, text in out.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(text))
    return None


def prepare(name: str, work: Path, dry_run: bool = False) -> Path:
    """A copy of the tree with the set applied (base: the tree itself); exits on a patch that does not apply."""
    if name == "base":
        return ROOT
    files, tree = patches(name), work / name
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(ROOT, tree, ignore=skip, symlinks=True)
    for p in files:
        why = apply_diff(p.read_text(), tree)
        if why:
            shutil.rmtree(tree)
            sys.exit(f"ab: {p.name} does not apply to the tree: {why}")
    if dry_run:
        shutil.rmtree(tree)
    return tree


def build(trees: dict[str, Path], work: Path, sweep: bool) -> dict[str, Path]:
    """libtrtplugins_kernels.so of each tree, built side by side; exits on a failed build."""
    archs = os.environ.get("TRTPLUGINS_CUDA_ARCHS", "90-real")
    procs = {}
    for name, tree in trees.items():
        bdir = work / f"build-{name}"
        cmd = (f"cmake -S {tree}/plugin_src -B {bdir} -G Ninja -DTRTPLUGINS_CUDA_ARCHS='{archs}' "
               f"-DTRTPLUGINS_BUILD_KERNELS=ON -DTRTPLUGINS_BUILD_TESTS=OFF -DTRTPLUGINS_SWEEP={'ON' if sweep else 'OFF'} && "
               f"cmake --build {bdir} --target trtplugins_kernels")
        log = open(work / f"build-{name}.log", "w")
        procs[name] = (subprocess.Popen(cmd, shell=True, stdout=log, stderr=subprocess.STDOUT), bdir, log)
    libs = {}
    for name, (proc, bdir, log) in procs.items():
        rc = proc.wait()
        log.close()
        if rc:
            tail = (work / f"build-{name}.log").read_text().strip().splitlines()[-3:]
            sys.exit(f"ab: build of {name} failed (rc {rc}): " + " | ".join(tail))
        libs[name] = bdir / "libtrtplugins_kernels.so"
    return libs


def key_of(r: dict) -> str:
    return f"{r['op']} {r['dtype']} {r.get('shape') or str(r['rows']) + 'x' + str(r['hidden'])}"


def read_run(run_dir: Path):
    """What one run wrote: a sweep's list, results.json's dict, or None."""
    for f in ("sweep.json", "results.json", "group_norm.json"):
        if (run_dir / f).is_file():
            return json.loads((run_dir / f).read_text())
    return None


def times_of(data) -> dict[str, float]:
    """Our seconds per launch at each point of one run: results.json's 'ours', or a sweep's fastest variant
    (what a table could pick once the patch is in), or group_norm.json's columns of ours (GN_COLUMNS)."""
    if isinstance(data, list):
        return {key_of(r): min(r["times"].values()) for r in data if r.get("times")}
    if isinstance(data, dict) and "rows" in data:
        return {f"{r['op']} {r['dtype']} {'x'.join(map(str, r['shape']))} {c}": r[c]
                for r in data["rows"] for c in GN_COLUMNS if r.get(c)}
    if isinstance(data, dict):
        return {key_of(r): r["ours"] for r in data["results"] if r.get("ours")}
    return {}


def table(runs: dict[str, list[dict[str, float]]]) -> list[str]:
    """Median time per point (us) and label, and first label / label (> 1: the label is faster)."""
    labels = list(runs)
    med = {lab: {k: statistics.median(t[k] for t in ts if k in t) for k in set().union(*ts)} for lab, ts in runs.items()}
    points = sorted(set().union(*(m.keys() for m in med.values())))
    ref = labels[0]
    width = {lab: max(len(lab), 16) + 2 for lab in labels}
    lines = ["point".ljust(34) + "".join(f"{lab:>{width[lab]}s}" for lab in labels)]
    for p in points:
        cells = []
        for lab in labels:
            t = med[lab].get(p)
            r = med[ref].get(p)
            cells.append("-" if t is None else f"{t * 1e6:.2f}" + ("" if lab == ref or r is None else f" {r / t:.3f}x"))
        lines.append(p.ljust(34) + "".join(f"{c:>{width[lab]}s}" for c, lab in zip(cells, labels)))
    return lines


def main():
    argv = sys.argv[1:]
    bench_args = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sets", nargs="*", help="patch sets: NAME or NAME+NAME (benchmarks/experiments/NAME.patch)")
    ap.add_argument("--no-base", dest="base", action="store_false", help="no run of the tree as it is")
    ap.add_argument("--sweep-build", action="store_true", help="build with -DTRTPLUGINS_SWEEP=ON (every variant)")
    ap.add_argument("--env", default=None, metavar="VAR=V1,V2", help="run each library once per value of VAR")
    ap.add_argument("--repeat", type=int, default=1, help="passes over the runs, alternating their order")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per benchmark run")
    ap.add_argument("--bench", choices=BENCHES, default="kernels", help="the benchmark script the runs take")
    ap.add_argument("--tag", default=None, help="names the output files (default: the sets)")
    ap.add_argument("--check", action="store_true", help="only check that each set applies (no build, no GPU)")
    ap.add_argument("--build-only", action="store_true", help="build the libraries, run nothing (no GPU)")
    args = ap.parse_args(own)
    bench_args = with_columns(args.bench, bench_args)
    names = (["base"] if args.base else []) + args.sets
    if not names:
        ap.error("nothing to run: name a patch set, or keep the base run")
    out = Path(os.environ.get("OUT", ROOT / "build"))
    tag = args.tag or "-".join(args.sets).replace("+", ".") or "base"
    work = Path(os.environ.get("AB_WORK", ROOT / "build" / "ab"))
    work.mkdir(parents=True, exist_ok=True)
    trees = {n: prepare(n, work, dry_run=args.check) for n in names}
    if args.check:
        print("ab: every set applies: " + ", ".join(args.sets))
        return
    libs = build(trees, work, args.sweep_build)
    if args.build_only:
        print("\n".join(f"ab: {n}: {lib}" for n, lib in libs.items()))
        return
    var, values = (args.env.split("=", 1)[0], args.env.split("=", 1)[1].split(",")) if args.env else (None, [None])
    labels = [(n, v) for n, v in itertools.product(names, values)]
    runs, raw, failed = {}, {}, {}
    for rep in range(args.repeat):
        for name, val in labels if rep % 2 == 0 else labels[::-1]:
            label = name + (f"-{val}" if var else "")  # loop_rows_ahead-2048
            run_dir = work / "runs" / f"{label}.{rep}"
            shutil.rmtree(run_dir, ignore_errors=True)
            env = dict(os.environ, TRTPLUGINS_KERNELS_LIB=str(libs[name]), PYTHONUNBUFFERED="1")
            if var:
                env[var] = val
            cmd = [sys.executable, str(trees[name] / "scripts" / BENCHES[args.bench]), "--out", str(run_dir), *bench_args]
            log = Path(f"{run_dir}.log")
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "w") as f:
                try:
                    rc = subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=args.timeout).returncode
                except subprocess.TimeoutExpired:
                    rc = "timeout"
            print(f"ab: {label} pass {rep}: rc {rc}", flush=True)
            if rc != 0:
                failed[f"{label}.{rep}"] = log.read_text().splitlines()[-20:]
            raw[f"{label}.{rep}"] = read_run(run_dir)
            runs.setdefault(label, []).append(times_of(raw[f"{label}.{rep}"]))
    lines = table(runs)
    print("\n".join(lines))
    out.mkdir(parents=True, exist_ok=True)
    (out / f"ab-{tag}.txt").write_text("\n".join(lines) + "\n")
    (out / f"ab-{tag}.json").write_text(json.dumps({"sets": names, "env": args.env, "bench_args": bench_args,
                                                     "table": lines, "failed": failed, "runs": raw}, indent=1))
    if failed:
        sys.exit("ab: runs failed: " + ", ".join(failed))

if __name__ == "__main__":
    main()
