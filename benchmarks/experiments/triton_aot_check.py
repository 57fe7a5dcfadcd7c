"""Issue 34 on a GPU: the Triton SkipNorm kernels built ahead of time (plugin_src/triton_aot.py) and
embedded in the kernel library (cmake -DTRTPLUGINS_TRITON_AOT=ON), run through the library's own
launch (SkipNorm variant kSkipNormAotVariant: no Triton at run time), checked against the eager chain
and timed beside our CUDA kernels (their pick), the launch's own choice (the AOT kernel where
triton_picks.json picks it), the max-autotune compile and a copy (CUDA-graph medians,
scripts/bench_timing.py). Writes OUT/triton_aot.json and .md, and OUT/triton_picks.json (picks()); with
--rows (small launches, where the launch takes each shape's small-launch cubin) triton_aot_small.json and
.md and OUT/triton_picks_small.json (picks(small=True)): the committed triton_picks.json holds both.

    python benchmarks/experiments/triton_aot_check.py --autotune plugin_src/ops/skip_norm/triton_configs.json
    cmake -S plugin_src -B build-aot -DTRTPLUGINS_TRITON_AOT=ON -DTRTPLUGINS_BUILD_KERNELS=ON ... && cmake --build build-aot
    TRTPLUGINS_KERNELS_LIB=build-aot/libtrtplugins_kernels.so \
        python benchmarks/experiments/triton_aot_check.py --out build/triton-aot

(--autotune: the fastest configuration per shape among triton_aot.candidates(), as Triton JIT kernels of
the same source; triton_aot.py builds from that table.)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "plugin_src"))
import triton_aot  # noqa: E402
from bench_ops import rms_chain  # noqa: E402
from bench_timing import compiled, copy_time, graph_time, mismatch  # noqa: E402

from trtplugins.ops import skip_norm  # noqa: E402

def chain_of(form: str):
    rms, skip, with_sum = "rms" in form, form.startswith("skip"), bool(triton_aot.FORMS[form]["SUM"])

    def chain(x, r, g, b):
        s = x + r if skip else x
        y = rms_chain(s, g) if rms else F.layer_norm(s.float(), s.shape[-1:], g, b).to(s.dtype)
        return (y, s) if with_sum else y
    return chain


def autotune(a) -> dict:
    """The fastest of triton_aot.candidates() per (form, dtype, hidden), run as Triton JIT kernels of the
    same source (each checked against the eager chain first): the table triton_aot.py builds from."""
    import triton

    mod = triton_aot.kernels()
    table = json.loads(a.autotune.read_text()) if a.autotune.exists() else {}  # updated point by point
    for form in a.forms:
        sw = triton_aot.FORMS[form]
        for dtype in a.dtypes:
            for hidden in a.hiddens:
                dt = getattr(torch, dtype)
                rows = max(1, a.mib * 2**20 // (hidden * dt.itemsize))
                x, r = (torch.randn(rows, hidden, device="cuda", dtype=dt) for _ in range(2))
                g, b = torch.randn(hidden, device="cuda"), torch.randn(hidden, device="cuda")
                y, s = torch.empty_like(x), torch.empty_like(x)
                chain = chain_of(form)
                want = chain(x, r, g.to(dt) if sw["RMS"] else g, b)
                nbytes = x.numel() * dt.itemsize * (2 + sw["SKIP"] + sw["SUM"])
                best = None
                for cfg in triton_aot.candidates(hidden, dtype):
                    fn = mod.rows_kernel if cfg["kernel"] == "rows" else mod.looped_kernel
                    run = lambda: fn[(triton.cdiv(rows, cfg["XBLOCK"]),)](  # noqa: E731
                        x, r, g, g, b, y, s, rows, 1e-5, HIDDEN=hidden, RBLOCK=cfg["RBLOCK"], XBLOCK=cfg["XBLOCK"],
                        num_warps=cfg["num_warps"], **sw)
                    run()
                    if mismatch((y, s) if sw["SUM"] else y, want):
                        continue
                    t = graph_time(run, nbytes / 3e12)
                    if best is None or t < best[0]:
                        best = (t, cfg)
                if best:
                    table[triton_aot.key(form, dtype, hidden)] = {**best[1], "us": round(best[0] * 1e6, 2)}
                    print(triton_aot.key(form, dtype, hidden), table[triton_aot.key(form, dtype, hidden)], flush=True)
                    # after each point: a run cut short keeps what it measured
                    a.autotune.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    return table


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=Path("build/triton-aot"))
    p.add_argument("--mib", type=int, default=96, help="tensor size per point")
    p.add_argument("--hiddens", type=int, nargs="+", default=list(triton_aot.HIDDENS))
    p.add_argument("--forms", nargs="+", default=list(triton_aot.FORMS), choices=list(triton_aot.FORMS))
    p.add_argument("--dtypes", nargs="+", default=list(triton_aot.DTYPES), choices=list(triton_aot.DTYPES))
    p.add_argument("--rows", type=int, nargs="+", metavar="N",
                   help="small launches: these row counts instead of --mib's tensors (writes triton_aot_small.*)")
    p.add_argument("--no-compile", dest="compile", action="store_false")
    p.add_argument("--autotune", type=Path, metavar="JSON",
                   help="only time every candidate configuration as Triton JIT kernels; write the fastest here")
    a = p.parse_args(argv)
    if a.autotune:
        a.autotune.parent.mkdir(parents=True, exist_ok=True)
        autotune(a)
        return 0
    aot, rows_out = skip_norm.aot_variant(), []
    for form in a.forms:
        sw = triton_aot.FORMS[form]
        for dtype in a.dtypes:
            for hidden, rows in ((h, n) for h in a.hiddens for n in a.rows or [0]):
                dt, rms, sk, su = getattr(torch, dtype), bool(sw["RMS"]), bool(sw["SKIP"]), bool(sw["SUM"])
                norm = "rms" if rms else "layer"
                row = dict(form=form, dtype=dtype, hidden=hidden)
                if aot not in skip_norm.candidates(dtype, norm, sk, hidden, output_sum=su):
                    rows_out.append({**row, "mismatch": "no cubin for this device in the library"})
                    continue
                rows = rows or max(1, a.mib * 2**20 // (hidden * dt.itemsize))
                x, r = (torch.randn(rows, hidden, device="cuda", dtype=dt) for _ in range(2))
                # weights exact in dt, so 16-bit launches may also take them as copies in dt (what the plugin has)
                g, b = (torch.randn(hidden, device="cuda").to(dt).float() for _ in range(2))
                b = None if rms else b
                args = dict(gamma=g, beta=b, norm=norm, output_sum=su)
                run = lambda v, **io: skip_norm.kernel(x, r if sk else None, variant=v, **args, **io)  # noqa: E731
                cuda = skip_norm.variant(dtype, norm, sk, hidden, rows=rows, aot=False)  # our CUDA kernels' pick
                chain = chain_of(form)
                cargs = (x, r, g.to(dt) if rms else g, b)
                row.update(rows=rows, mismatch=mismatch(run(aot), chain(*cargs)))
                nbytes = x.numel() * dt.itemsize * (2 + sk + su)
                row["aot_us"] = 1e6 * graph_time(lambda: run(aot), nbytes / 3e12)
                row["ours_us"] = 1e6 * graph_time(lambda: run(cuda), nbytes / 3e12)
                row["picked_us"] = 1e6 * graph_time(lambda: run(-1), nbytes / 3e12)  # the launch's own choice
                if dt != torch.float32:  # ours and the pick with the weights' 16-bit copies too
                    io = dict(gamma_io=g.to(dt), beta_io=None if rms else b.to(dt))
                    vio = skip_norm.variant(dtype, norm, sk, hidden, io_weights=True, rows=rows, aot=False)
                    row["ours_io_us"] = 1e6 * graph_time(lambda: run(vio, **io), nbytes / 3e12)
                    row["picked_io_us"] = 1e6 * graph_time(lambda: run(-1, **io), nbytes / 3e12)
                if a.compile:
                    cfn = compiled(chain, cargs)
                    row["compile_us"] = 1e6 * graph_time(lambda: cfn(*cargs), nbytes / 3e12)
                row["copy_us"] = 1e6 * copy_time(nbytes)
                rows_out.append(row)
                print(json.dumps(row), flush=True)
    a.out.mkdir(parents=True, exist_ok=True)
    name = "triton_aot_small" if a.rows else "triton_aot"
    (a.out / f"{name}.json").write_text(json.dumps(rows_out, indent=1) + "\n")
    major, minor = torch.cuda.get_device_capability()
    picks = triton_aot.picks(rows_out, 10 * major + minor, small=bool(a.rows))  # -> ops/skip_norm/triton_picks.json
    (a.out / f"triton_picks{'_small' if a.rows else ''}.json").write_text(json.dumps(picks, indent=1) + "\n")
    md = triton_aot.table(rows_out)
    (a.out / f"{name}.md").write_text(md)
    print(md, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
