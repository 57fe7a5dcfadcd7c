"""Ahead-of-time compilation of the Triton kernels (ops/*/<op>_triton.py) into cubins, on a machine
without a GPU: per target architecture, op form, I/O type and hidden size, with the resources ptxas
reports for each (registers, spills, shared memory). Output: OUT/sm_<cc>/<name>.cubin and
OUT/manifest.json (what each cubin is, its launch geometry and parameters, in order).

    python plugin_src/triton_aot.py --out build/triton-aot [--archs 90 100] [--hiddens 768 4096]

Launch ABI (Triton 3.6): the kernel's parameters are the non-constexpr arguments in order, then two
pointers (global and profile scratch; null when the manifest's sizes are 0); grid (ceil(rows / XBLOCK)),
block (32 * num_warps), dynamic shared memory `shared` bytes. Configurations: `config()` below: the measured
table (ops/skip_norm/triton_configs.json, from benchmarks/experiments/triton_aot_check.py --autotune on a
GPU) where it has the shape, else a rule. Each shape also has a cubin for small launches (`small_config()`:
one row per program, 4 values a thread, as Inductor compiles a launch of a few rows), which a launch of
few elements (skipNormSmall) takes. Where the plugin runs them: ops/skip_norm/triton_picks.json, the
(form, dtype, hidden) points per architecture where they measured faster than the hand-written kernels,
with FP32 weights or with the 16-bit copies a 16-bit export's plugin keeps (`committed_picks()` of the runs
committed in benchmarks/triton_aot; keys "small/..." for the small-launch cubins);
elsewhere they are built but only run when asked for."""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: op form -> its constexpr switches
FORMS = {
    "layer_norm": dict(RMS=0, SKIP=0, BIAS=0, BETA=1, SUM=0),
    "rms_norm": dict(RMS=1, SKIP=0, BIAS=0, BETA=0, SUM=0),
    "skip_layer_norm": dict(RMS=0, SKIP=1, BIAS=0, BETA=1, SUM=1),
    "skip_rms_norm": dict(RMS=1, SKIP=1, BIAS=0, BETA=0, SUM=1),
    "skip_layer_norm_no_sum": dict(RMS=0, SKIP=1, BIAS=0, BETA=1, SUM=0),  # BERT's: the sum output unused
}
TUNED_AS = {"skip_layer_norm_no_sum": "skip_layer_norm"}  # a form without its own measured configurations
DTYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}
HIDDENS = (768, 1024, 2048, 3072, 4096, 5120, 8192, 12288, 16384)
ARCHS = (80, 90, 100, 120)
PARAMS = ("x", "skip", "bias", "gamma", "beta", "y", "s_out", "rows", "eps")
LOOPED_FROM = 8192  # hidden sizes past this: the looped kernel (where no measured configuration says)
CONFIGS = HERE / "ops" / "skip_norm" / "triton_configs.json"  # measured on the GPU, where committed
PICKS = HERE / "ops" / "skip_norm" / "triton_picks.json"  # where the plugin runs these kernels (picks())
RUNS = HERE.parent / "benchmarks" / "triton_aot"  # the measured runs the picks come from (committed_picks())


def _module(name: str, path: Path):
    """A module from its file, alone (plugin_src is not a package; the build's Python may lack
    trtplugins' dependencies)."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@functools.cache
def kernels():
    """The SkipNorm Triton module (loaded once per process)."""
    return _module("skip_norm_triton", HERE / "ops" / "skip_norm" / "skip_norm_triton.py")


def _write(path: Path, text: str) -> None:
    """Through trtplugins.paths.write_file (beside, then renamed), which needs only the standard library."""
    _module("trtplugins_paths", HERE.parent / "trtplugins" / "paths.py").write_file(path, text)


def key(form: str, dtype: str, hidden: int, small: bool = False) -> str:
    return f"{'small/' if small else ''}{form}/{dtype}/{hidden}"


def candidates(hidden: int, dtype: str) -> list[dict]:
    """Every launch geometry worth timing for a hidden size (the autotune, triton_aot_check.py)."""
    rblock = 1 << (hidden - 1).bit_length()
    out = []
    if rblock <= 16384:
        out += [dict(kernel="rows", RBLOCK=rblock, XBLOCK=xb, num_warps=w) for xb in (1, 2, 4, 8) for w in (4, 8, 16)
                if rblock * xb <= 16384 and rblock * xb >= 32 * w]
    return out + [dict(kernel="looped", RBLOCK=rb, XBLOCK=1, num_warps=w) for rb in (1024, 2048, 4096) for w in (4, 8, 16)
                  if rb < rblock]


def config(hidden: int, dtype: str, form: str | None = None, table: dict | None = None) -> dict:
    """Launch geometry for a hidden size: the measured table's (form, dtype, hidden) entry where it has
    one (or the form it is TUNED_AS has), else Inductor's kind: rows whole in registers, several rows per
    program while a program holds at most 4096 values (8192 for 16-bit), else one row looped."""
    for f in (form, TUNED_AS.get(form)) if table and form else ():
        if f and key(f, dtype, hidden) in table:
            return dict(table[key(f, dtype, hidden)])
    rblock = 1 << (hidden - 1).bit_length()
    if hidden > LOOPED_FROM:
        return dict(kernel="looped", RBLOCK=2048, XBLOCK=1, num_warps=8)
    per = 8192 if dtype != "float32" else 4096
    xblock = max(1, min(8, per // rblock))
    return dict(kernel="rows", RBLOCK=rblock, XBLOCK=xblock, num_warps=max(4, min(16, rblock * xblock // 1024)))


def small_config(hidden: int) -> dict:
    """Launch geometry for launches of a few rows (ncu, run 8: the compiled kernel of one 768-wide row is
    one program of 8 warps, 4 values a thread, each warp's chain 110 instructions against 315 for ours):
    a row per program, 4 values a thread up to 32 warps (8192: 8; 16 spilled in skip+LayerNorm); past
    LOOPED_FROM, the row looped."""
    rblock = 1 << (hidden - 1).bit_length()
    if hidden > LOOPED_FROM:
        return dict(kernel="looped", RBLOCK=2048, XBLOCK=1, num_warps=16)
    return dict(kernel="rows", RBLOCK=rblock, XBLOCK=1, num_warps=max(4, min(32, rblock // 128)))


def signature(dtype: str) -> dict:
    io, w = f"*{DTYPES[dtype]}", "*fp32"
    sig = dict(x=io, skip=io, bias=w, gamma=w, beta=w, y=io, s_out=io, rows="i32", eps="fp32")
    return {**sig, **{k: "constexpr" for k in ("HIDDEN", "RBLOCK", "XBLOCK", "RMS", "SKIP", "BIAS", "BETA", "SUM")}}


def compile_one(mod, form: str, dtype: str, hidden: int, cc: int, cfg: dict | None = None, small: bool = False):
    """(compiled kernel, its manifest entry but the resources); small: the cubin for small launches."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    cfg = cfg or config(hidden, dtype, form)
    fn = mod.rows_kernel if cfg["kernel"] == "rows" else mod.looped_kernel
    consts = dict(HIDDEN=hidden, RBLOCK=cfg["RBLOCK"], XBLOCK=cfg["XBLOCK"], **FORMS[form])
    # the pointers 16-byte aligned (as TensorRT's buffers and torch's allocations are): 16-byte accesses
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(7)}
    src = ASTSource(fn=fn, signature=signature(dtype), constexprs=consts, attrs=attrs)
    k = triton.compile(src, target=GPUTarget("cuda", cc, 32), options={"num_warps": cfg["num_warps"]})
    md = k.metadata
    name = f"skip_norm_{form}_{DTYPES[dtype]}_{hidden}{'_small' if small else ''}"
    entry = dict(name=name, symbol=md.name, op="SkipNorm", form=form, dtype=dtype, hidden=hidden, small=int(small),
                 arch=f"sm_{cc}", **cfg, shared=md.shared, params=list(PARAMS),
                 global_scratch_size=md.global_scratch_size, profile_scratch_size=md.profile_scratch_size)
    return k, entry


def ptxas_resources(ptx: str, cc: int) -> dict:
    """Registers, spills and stack of the PTX's entry, as ptxas reports them for the target."""
    import triton

    target = re.search(r"^\s*\.target\s+(sm_\w+)", ptx, re.M)  # as Triton wrote it (sm_90a, sm_100a, sm_120a)
    arch = target.group(1) if target else f"sm_{cc}"
    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / ("ptxas-blackwell" if cc >= 100 else "ptxas")
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        src.write_text(ptx)
        out = subprocess.run([str(ptxas), f"-arch={arch}", "-v", str(src), "-o", os.devnull], capture_output=True,
                             text=True, check=True).stderr
    num = lambda pat: int(m.group(1)) if (m := re.search(pat, out)) else 0  # noqa: E731
    return dict(registers=num(r"Used (\d+) registers"), spill_stores=num(r"(\d+) bytes spill stores"),
                spill_loads=num(r"(\d+) bytes spill loads"), stack=num(r"(\d+) bytes stack frame"))


def _build_one(out: Path, cc: int, form: str, dtype: str, hidden: int, cfg: dict, few: bool) -> dict:
    """One cubin written under out and its manifest entry (a worker process's task)."""
    k, entry = compile_one(kernels(), form, dtype, hidden, cc, cfg, few)
    entry.update(ptxas_resources(k.asm["ptx"], cc))
    entry["cubin"] = f"sm_{cc}/{entry['name']}.cubin"
    (out / entry["cubin"]).write_bytes(k.asm["cubin"])
    return entry


def build(out: Path, archs=ARCHS, forms=tuple(FORMS), dtypes=tuple(DTYPES), hiddens=HIDDENS,
          table: dict | None = None, small: bool = True, jobs: int | None = None) -> list[dict]:
    """table: measured configurations by key(form, dtype, hidden) (triton_aot_check.py --autotune);
    small: each shape's cubin for small launches too; jobs: compiling processes (default: the CPUs)."""
    from concurrent.futures import ProcessPoolExecutor

    tasks = []
    for cc in archs:
        (out / f"sm_{cc}").mkdir(parents=True, exist_ok=True)
        for form in forms:
            for dtype in dtypes:
                for hidden in hiddens:
                    for few in (False, True) if small else (False,):
                        cfg = small_config(hidden) if few else config(hidden, dtype, form, table)
                        tasks.append((out, cc, form, dtype, hidden, cfg, few))
    with ProcessPoolExecutor(max_workers=min(len(tasks), jobs or os.cpu_count() or 1)) as pool:
        manifest = list(pool.map(_build_one, *zip(*tasks)))
    _write(out / "manifest.json", json.dumps(manifest, indent=1) + "\n")
    return manifest


def picks(rows: list[dict], arch: int, margin: float = 0.99, small: bool = False, against: str = "ours_us") -> dict:
    """Where the AOT kernel beat the hand-written ones (time below `margin` x theirs) in a measured run
    (triton_aot_check.py's rows: aot_us and, per form, dtype and hidden, `against`: ours_us, the hand-written
    kernels with FP32 weights, or ours_io_us, with the weights' 16-bit copies): {"sm_<arch>": {key: times}}.
    small: a small-launch run (--rows), keyed key(..., small=True), a shape won where it won at every row
    count measured (the slower times kept)."""
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(key(r["form"], r["dtype"], r["hidden"], small), []).append(r)
    won = {k: {"aot_us": round(max(r["aot_us"] for r in rs), 2), against: round(max(r[against] for r in rs), 2)}
           for k, rs in by.items()
           if all(r.get("aot_us") and r.get(against) and r["aot_us"] < margin * r[against] for r in rs)}
    return {f"sm_{arch}": dict(sorted(won.items()))}


PICK_WEIGHTS = {"fp32": 1, "io": 2}  # Cubin::picked's bits: won against the kernels with these weights


def committed_picks(runs: Path, arch: int = 90) -> dict:
    """The plugin's table (ops/skip_norm/triton_picks.json) from the runs committed in `runs`: triton_aot.json
    (large launches against FP32 weights), triton_aot_io.json (16-bit, against the weights' 16-bit copies)
    and triton_aot_small.json (small launches: latency, whatever the weights), each key with the weights
    it won against."""
    load = lambda name: json.loads((runs / name).read_text()) if (runs / name).is_file() else []  # noqa: E731
    table: dict[str, dict] = {}
    for name, against, small, weights in (("triton_aot.json", "ours_us", False, ["fp32"]),
                                          ("triton_aot_io.json", "ours_io_us", False, ["io"]),
                                          ("triton_aot_small.json", "ours_us", True, ["fp32", "io"])):
        for k, times in picks(load(name), arch, small=small, against=against)[f"sm_{arch}"].items():
            entry = table.setdefault(k, {"weights": []})
            entry.update(times)
            entry["weights"] = entry.pop("weights") + weights
    return {f"sm_{arch}": dict(sorted(table.items()))}


def merge_run(run: list[dict], runs: Path) -> list[str]:
    """A new large-launch run (triton_aot_check.py's triton_aot.json) into the runs committed in `runs`: the
    rows of each key it measured replace that key's rows in triton_aot.json and, for its 16-bit rows, in
    triton_aot_io.json (where a key may hold several runs: the new one alone then stands for it), their tables
    (.md) written again; other keys keep theirs. A key whose launch did not match the reference is not merged.
    Returns the keys merged."""
    row_key = lambda r: key(r["form"], r["dtype"], r["hidden"])  # noqa: E731
    done = {row_key(r) for r in run if r.get("aot_us")} - {row_key(r) for r in run if r.get("mismatch")}
    for name, new in (("triton_aot.json", [r for r in run if row_key(r) in done]),
                      ("triton_aot_io.json", [r for r in run if row_key(r) in done and "ours_io_us" in r])):
        path = runs / name
        old = json.loads(path.read_text()) if path.is_file() else []
        mine = {k: [r for r in new if row_key(r) == k] for k in dict.fromkeys(map(row_key, new))}
        out, placed = [], set()
        for r in old:  # each key's new rows where its first old row was
            k = row_key(r)
            if k not in done:
                out.append(r)
            elif k in mine and k not in placed:
                out += mine[k]
                placed.add(k)
        out += [r for k, rs in mine.items() if k not in placed for r in rs]
        _write(path, json.dumps(out, indent=1) + "\n")
        _write(path.with_suffix(".md"), table(out))
    return sorted(done)


def table(rows: list[dict]) -> str:
    """The rows of a run (triton_aot_check.py's) as the markdown table committed beside their JSON."""
    cols = ("form", "dtype", "hidden", "rows", "AOT us", "ours us", "picked us", "ours io us", "picked io us",
            "compile us", "copy us", "AOT % of copy", "check")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    nan = float("nan")
    for r in rows:
        t = r.get("aot_us", nan)
        us = " | ".join(f"{r.get(k, nan):.2f}" for k in ("ours_us", "picked_us", "ours_io_us", "picked_io_us",
                                                          "compile_us", "copy_us"))
        lines.append(f"| {r['form']} | {r['dtype']} | {r['hidden']} | {r.get('rows', '')} | {t:.2f} | {us} | "
                     f"{100 * r.get('copy_us', nan) / t:.0f} | {r['mismatch'] or 'ok'} |")
    return "\n".join(lines) + "\n"


DTYPE_IDS = {"float32": 0, "float16": 1, "bfloat16": 2}  # trtp::DType


def emit_cpp(manifest: list[dict], out: Path, path: Path, picked: dict | None = None) -> None:
    """The table of plugin_src/cubins/cubins.h: every cubin as a byte array (written beside, then renamed);
    picked: picks()'s table, the cubins the plugin runs."""
    picked = picked or {}
    # sorted as findCubin searches: (arch, op, form, dtype, hidden, small)
    manifest = sorted(manifest, key=lambda m: (int(m["arch"][3:]), 0, list(FORMS).index(m["form"]),
                                               DTYPE_IDS[m["dtype"]], m["hidden"], m.get("small", 0)))
    lines = ["// Generated by plugin_src/triton_aot.py: do not edit.", '#include "cubins.h"', "", "namespace trtp {",
             "namespace {"]
    for i, m in enumerate(manifest):
        data = (out / m["cubin"]).read_bytes()
        lines.append(f"alignas(16) const unsigned char k{i}[] = {{")
        lines += ["    " + ",".join(str(b) for b in data[j:j + 32]) + "," for j in range(0, len(data), 32)]
        lines.append("};")
    lines += ["} // namespace", "", f"const Cubin kCubins[{max(1, len(manifest))}] = {{"]
    for i, m in enumerate(manifest):
        small = m.get("small", 0)
        won = picked.get(m["arch"], {}).get(key(m["form"], m["dtype"], m["hidden"], small))  # without weights (one run's picks()): FP32
        bits = 0 if won is None else sum(PICK_WEIGHTS[w] for w in won.get("weights", ["fp32"]))
        lines.append(f'    {{kCubinSkipNorm, {list(FORMS).index(m["form"])}, {DTYPE_IDS[m["dtype"]]}, {m["hidden"]}, {small}, '
                     f'{m["arch"][3:]}, {m["XBLOCK"]}, {m["num_warps"]}, {m["shared"]}, '
                     f'{bits}, "{m["symbol"]}", k{i}, sizeof(k{i})}},')
    lines += ["};", f"const int32_t kCubinCount = {len(manifest)};", "} // namespace trtp", ""]
    _write(path, "\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=Path("build/triton-aot"))
    p.add_argument("--archs", type=int, nargs="+", default=list(ARCHS))
    p.add_argument("--forms", nargs="+", default=list(FORMS), choices=list(FORMS))
    p.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=list(DTYPES))
    p.add_argument("--hiddens", type=int, nargs="+", default=list(HIDDENS))
    p.add_argument("--emit-cpp", type=Path, help="also write the table of plugin_src/cubins/cubins.h here")
    p.add_argument("--configs", type=Path, default=CONFIGS if CONFIGS.exists() else None,
                   help="measured configurations (JSON, triton_aot_check.py --autotune; default: %(default)s)")
    p.add_argument("--picks", type=Path, default=PICKS if PICKS.exists() else None,
                   help="where the plugin runs these kernels (JSON, picks(); default: %(default)s)")
    p.add_argument("--merge-run", type=Path, metavar="JSON",
                   help="only merge a measured run (triton_aot_check.py's triton_aot.json) into the runs committed "
                        "in benchmarks/triton_aot and rewrite the picks from them (no Triton needed)")
    a = p.parse_args(argv)
    if a.merge_run:
        try:
            merged = merge_run(json.loads(a.merge_run.read_text()), RUNS)
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"triton_aot: cannot merge {a.merge_run}: {e}", file=sys.stderr)
            return 2
        _write(PICKS, json.dumps(committed_picks(RUNS), indent=1) + "\n")
        print(f"triton_aot: {len(merged)} keys merged into {RUNS}; {PICKS} rewritten")
        return 0
    try:
        import triton  # noqa: F401  (only whether it is there)
    except ImportError:
        print("triton_aot: Triton is not installed (pip install triton)", file=sys.stderr)
        return 2
    try:
        table = json.loads(a.configs.read_text()) if a.configs else None
        picked = json.loads(a.picks.read_text()) if a.picks else None
    except (OSError, ValueError) as e:
        print(f"triton_aot: cannot read {a.configs} or {a.picks}: {e}", file=sys.stderr)
        return 2
    manifest = build(a.out, a.archs, a.forms, a.dtypes, a.hiddens, table)
    if a.emit_cpp:
        emit_cpp(manifest, a.out, a.emit_cpp, picked)
    spills = [m["name"] + " " + m["arch"] for m in manifest if m["spill_stores"]]
    print(f"triton_aot: {len(manifest)} cubins in {a.out}; registers {min(m['registers'] for m in manifest)}-"
          f"{max(m['registers'] for m in manifest)}; spills in {len(spills)}{': ' + ', '.join(spills[:8]) if spills else ''}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
