#!/usr/bin/env python3
"""Registers and spills of every kernel, per GPU architecture the library ships (ptxas -v; no GPU needed):
each kernel source compiled to a cubin per arch as the CMake build compiles it, the kernels that spill listed.

  python3 benchmarks/experiments/ptxas_spills.py [--archs 90 100] [--files plugin_src/ops/group_norm/resident.cu]
      [--json OUT.json] [-j 2]

Default: the CMake default list (TRTPLUGINS_DEFAULT_CUDA_ARCHS, real archs) and every .cu under plugin_src/ops.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "plugin_src"
ENTRY = re.compile(r"Compiling entry function '(\S+)' for 'sm_(\d+)a?'")
USED = re.compile(r"Used (\d+) registers")
SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


def default_archs() -> list[str]:
    """The real archs of CMakeLists.txt's TRTPLUGINS_DEFAULT_CUDA_ARCHS ("75-real;...;120-virtual" -> 75 ... 120)."""
    m = re.search(r'set\(TRTPLUGINS_DEFAULT_CUDA_ARCHS "([^"]+)"\)', (SRC / "CMakeLists.txt").read_text())
    if not m:
        sys.exit("ptxas_spills: no TRTPLUGINS_DEFAULT_CUDA_ARCHS in plugin_src/CMakeLists.txt")
    return [a.split("-")[0] for a in m.group(1).split(";") if a.endswith("-real")]


def parse(log: str) -> list[dict]:
    """ptxas -v's lines as one record per kernel: name (mangled), arch, registers, spill stores and loads (bytes)."""
    out, cur = [], None
    for line in log.splitlines():
        if m := ENTRY.search(line):
            cur = {"kernel": m.group(1), "arch": m.group(2), "registers": 0, "spill_stores": 0, "spill_loads": 0}
            out.append(cur)
        elif cur and (m := SPILL.search(line)):
            cur["spill_stores"], cur["spill_loads"] = int(m.group(1)), int(m.group(2))
        elif cur and (m := USED.search(line)):
            cur["registers"] = int(m.group(1))
    return out


def demangled(names: list[str]) -> dict[str, str]:
    """Each mangled name's demangled form, by one c++filt (names unchanged without it)."""
    tool = shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    out = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True).stdout.splitlines()
    return dict(zip(names, out)) if len(out) == len(names) else {n: n for n in names}


def short(name: str) -> str:
    """A demangled name without namespaces and parameter list: residentKernel<__half, 8, ...>."""
    name = re.sub(r"\b\w+::|\(anonymous namespace\)::", "", name)
    return re.sub(r"\((\w+)\)(\d)", r"\2", name.split(">(")[0] + ">" if ">(" in name else name)


def compile_one(nvcc: str, src: Path, arch: str, tmp: Path) -> tuple[list[dict], str]:
    """One source for one arch (with the headers of its own tree: a patched copy's too): its kernels' records, or the
    compiler's last lines where it failed."""
    tree = next((p for p in src.parents if p.name == "plugin_src"), SRC)
    cmd = [nvcc, "-I", str(tree / "device"), "-I", str(tree / "cubins"), "-O3", "-DNDEBUG",
           f"-arch=sm_{arch}", "-cubin", "--expt-relaxed-constexpr", "-std=c++17", "-x", "cu", str(src),
           "-o", str(tmp / f"{src.stem}.{arch}.cubin"), "-Xptxas", "-v"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        return [], " | ".join((r.stderr or r.stdout).strip().splitlines()[-3:])
    return [dict(k, source=str(src.relative_to(tree.parent))) for k in parse(r.stderr)], ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--archs", nargs="+", default=None, help="compute capabilities (90 100 ...); default: CMake's list")
    ap.add_argument("--files", nargs="+", type=Path, default=None,
                    help="kernel sources; default: plugin_src/ops/**/*.cu")
    ap.add_argument("--json", type=Path, help="every kernel's record, spilling or not")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 2, help="compiles at once")
    args = ap.parse_args(argv)
    nvcc = shutil.which("nvcc") or "/usr/local/bin/nvcc"
    if not Path(nvcc).exists():
        sys.exit("ptxas_spills: no nvcc on PATH")
    files = [f.resolve() for f in args.files] if args.files else sorted((SRC / "ops").rglob("*.cu"))
    archs = args.archs or default_archs()
    with tempfile.TemporaryDirectory() as d, ThreadPoolExecutor(args.j) as pool:
        jobs = [(f, a, pool.submit(compile_one, nvcc, f, a, Path(d))) for f in files for a in archs]
        records, failed = [], []
        for f, a, job in jobs:
            recs, err = job.result()
            records += recs
            if err:
                failed.append(f"{f} sm_{a}: {err}")
    if args.json:
        args.json.write_text(json.dumps({"archs": archs, "kernels": records}, indent=1))
    spilling = [r for r in records if r["spill_stores"] or r["spill_loads"]]
    print(f"{len(records)} kernels over {len(archs)} archs ({' '.join(archs)}): {len(spilling)} spill")
    if spilling:
        print("| arch | kernel | registers | spill stores / loads (bytes) |\n|---|---|---|---|")
        names = demangled(sorted({r["kernel"] for r in spilling}))
        for r in sorted(spilling, key=lambda r: (int(r["arch"]), -r["spill_stores"])):
            spills = f"{r['spill_stores']} / {r['spill_loads']}"
            print(f"| sm_{r['arch']} | {short(names[r['kernel']])} | {r['registers']} | {spills} |")
    for line in failed:
        print(f"FAILED {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
