#!/usr/bin/env python3
"""Benchmark the fused kernels against PyTorch eager, its best single op, static torch.compile
and a device-to-device copy of the same bytes (issue 6). One process, one GPU.

Every variant is timed as CUDA-graph replays of k back-to-back launches (k chosen so one replay
takes ~1 ms), after warm-up; the median over replays / k is the time per launch, so CPU dispatch
(~40 us for a compiled call) never decides a result. Effective bandwidth = bytes that must be
read + written / time. Sizes below the 50 MB L2 run from L2 for every variant alike (copy too).

torch.compile (dynamic=False, one compile per shape) is slow to compile, so it runs only at the
largest size of each hidden in --compile-hidden (768, 4096, 16384) and at the small 1x768 / 8x768
launches: 5 compiles per op and precision, ~1 s each.

  python3 scripts/bench_kernels.py --out benchmarks      # RESULTS.md, bandwidth.png, results.json
"""

from __future__ import annotations

import argparse
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
from trtplugins import kernels  # noqa: E402

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
HIDDENS = (768, 1024, 4096, 5120, 8192, 16384)
MIN_BYTES = 256 * 2**20
EPS = 1e-5


# --- ops: (ours, eager chain, best single op or None), built over one set of tensors ----------


def make_op(name, rows, hidden, dt):
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(rows, hidden, device="cuda", generator=g).to(dt)
    skip = torch.randn(rows, hidden, device="cuda", generator=g).to(dt)
    w32 = torch.randn(hidden, device="cuda", generator=g) * 0.1 + 1.0
    b32 = torch.randn(hidden, device="cuda", generator=g) * 0.1
    w, b = w32.to(dt), b32.to(dt)  # PyTorch's chains take weights in the I/O dtype
    y = torch.empty_like(x)
    es = x.element_size()
    n = rows * hidden

    if name in ("bias_gelu", "bias_relu6"):
        act = "gelu" if name == "bias_gelu" else "relu6"
        ours = lambda: kernels.bias_activation(x, b32, act, out=y)  # noqa: E731
        if act == "gelu":
            chain = lambda x, b: F.gelu(x + b)  # noqa: E731
        else:
            chain = lambda x, b: torch.clamp(torch.relu(x + b), max=6.0)  # noqa: E731
        args = (x, b)
        nbytes = 2 * n * es + hidden * 4
        best = None
    else:
        norm = "layer" if "layer" in name else "rms"
        has_skip = name.startswith("skip")
        sk = skip if has_skip else None
        beta = b32 if norm == "layer" else None
        ours = lambda: kernels.skip_norm(x, sk, gamma=w32, beta=beta, norm=norm, epsilon=EPS, out=y)  # noqa: E731
        if norm == "layer":
            single = lambda s, w, b: F.layer_norm(s, (hidden,), w, b, EPS)  # noqa: E731
        else:
            single = lambda s, w, b: F.rms_norm(s, (hidden,), w, EPS)  # noqa: E731
            if not has_skip:  # the chain RMSNorm replaces (as in HF Llama)
                def single_chain(s, w, b):
                    v = s.float()
                    return (v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + EPS)).to(s.dtype) * w
        if has_skip:
            chain = lambda x, sk, w, b: single(x + sk, w, b)  # noqa: E731
            args = (x, skip, w, b)
            best = None
        else:
            chain = single_chain if norm == "rms" else single
            args = (x, w, b)
            best = lambda: single(x, w, b)  # noqa: E731
        nbytes = (3 if has_skip else 2) * n * es + hidden * 4 * (2 if norm == "layer" else 1)
    return ours, chain, args, best, nbytes


OPS = ("bias_gelu", "bias_relu6", "layer_norm", "skip_layer_norm", "rms_norm", "skip_rms_norm")


# --- timing -------------------------------------------------------------------------------------


def graph_time(fn, est_s: float, replays: int = 7) -> float:
    """Median seconds per call of fn over graph replays of k back-to-back calls."""
    k = max(1, min(200, int(1e-3 / max(est_s, 1e-6))))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
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
    """A plain vectorised copy kernel: the driver's memcpy for D2D is slower at some sizes
    (seen: 2.7 TB/s at 768 MB moved vs 4.2 at 512 MB), so the limit is the faster of the two."""
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


def rows_grid(hidden, bytes_per_row):
    rows, out = 1, []
    while True:
        out.append(rows)
        if rows * bytes_per_row >= MIN_BYTES:
            return out
        rows *= 8


# --- main ---------------------------------------------------------------------------------------


def env_info():
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001
        driver = f"unknown ({e})"
    p = torch.cuda.get_device_properties(0)
    return {
        "gpu": torch.cuda.get_device_name(0), "sms": p.multi_processor_count, "driver": driver,
        "cuda": torch.version.cuda, "torch": torch.__version__, "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def bench(args):
    torch.backends.cuda.matmul.allow_tf32 = False
    results = []
    lat_empty = graph_time(lambda: kernels.empty_launch(torch.cuda.current_stream().cuda_stream), 2e-6)
    print(f"empty kernel: {lat_empty * 1e6:.2f} us per launch (graph)", flush=True)
    t0 = time.time()
    for op in args.ops:
        for dname in args.dtypes:
            dt = DTYPES[dname]
            points = [(1, 768), (8, 768)]
            for h in args.hiddens:
                per_row = make_op(op, 2, h, dt)[4] - make_op(op, 1, h, dt)[4]  # weights excluded
                points += [(r, h) for r in rows_grid(h, per_row) if (r, h) not in points]
            largest = {}
            for r, h in points:
                largest[h] = max(largest.get(h, 0), r)
            for rows, h in points:
                ours, chain, cargs, best, nbytes = make_op(op, rows, h, dt)
                est = nbytes / 3.5e12 + 3e-6
                rec = {"op": op, "dtype": dname, "rows": rows, "hidden": h, "bytes": nbytes}
                rec["copy"] = copy_time(nbytes)
                rec["ours"] = graph_time(ours, est)
                rec["eager"] = graph_time(lambda: chain(*cargs), est * 3)
                rec["best"] = graph_time(best, est) if best else None
                want_compile = args.compile and (
                    (h in args.compile_hidden and rows == largest[h])
                    or (h == 768 and rows in (1, 8))
                )
                rec["compile"] = None
                if want_compile:
                    try:
                        torch._dynamo.reset()
                        cfn = torch.compile(chain, dynamic=False)
                        cfn(*cargs)
                        rec["compile"] = graph_time(lambda: cfn(*cargs), est)
                    except Exception as e:  # noqa: BLE001
                        print(f"  torch.compile failed for {op} {dname} {rows}x{h}: {e}", flush=True)
                results.append(rec)
                del ours, chain, cargs, best
                c = f" compile {rec['compile'] * 1e6:8.2f}" if rec["compile"] else ""
                print(f"{op:16s} {dname} {rows:7d}x{h:<6d} {nbytes / 2**20:9.2f} MB  ours {rec['ours'] * 1e6:8.2f} us "
                      f"({rec['copy'] / rec['ours'] * 100:5.1f}% copy)  eager {rec['eager'] * 1e6:8.2f}{c}", flush=True)
            torch.cuda.empty_cache()
    print(f"bench took {time.time() - t0:.0f} s", flush=True)
    return {"env": env_info(), "empty_launch": lat_empty, "results": results}


# --- report -------------------------------------------------------------------------------------


def fmt_us(t):
    return "" if t is None else f"{t * 1e6:.2f}"


def ratio(a, b):
    return "" if a is None or b is None else f"{a / b:.2f}x"


def write_report(data, out: Path, history: str):
    env, res, empty = data["env"], data["results"], data["empty_launch"]
    L = ["# Kernel benchmark (issue 6)", "",
         f"GPU: {env['gpu']} ({env['sms']} SMs), driver {env['driver']}, CUDA {env['cuda']} (torch), "
         f"torch {env['torch']}, Python {env['python']}; {env['date']}.", "",
         "Time per launch = median of CUDA-graph replays of back-to-back launches (warm-up first). "
         "GB/s = bytes that must move (inputs read once + outputs written once + FP32 weights) / time. "
         "% copy = copy time / our time, the copy moving the same bytes (read + write) device to device: the faster "
         "of torch's copy_ (driver memcpy) and a plain Triton copy kernel. "
         "Speedups are peer time / our time. Sizes under the 50 MB L2 run from L2 for all variants.", "",
         "Peers: eager = the unfused PyTorch chain (x + b then F.gelu; clamp(relu(x + b), max=6); x + skip then "
         "F.layer_norm / F.rms_norm; the HF-style RMSNorm chain in FP32); best = F.layer_norm / F.rms_norm "
         "(plain norms); compile = torch.compile(chain, dynamic=False), compiled per shape, only at the largest "
         "size per hidden in {768, 4096, 16384} and at 1x768 / 8x768 (compiles are slow).", "",
         f"Empty kernel (launch to completion, in a graph): {empty * 1e6:.2f} us.", ""]

    # headline: large sizes
    L += ["## Headline: largest size per hidden", "",
          "| op | dtype | shape | MB | ours us | ours GB/s | % copy | vs eager | vs best | vs compile |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    largest = {}
    for r in res:
        k = (r["op"], r["dtype"], r["hidden"])
        if r["rows"] > 8 and (k not in largest or r["rows"] > largest[k]["rows"]):
            largest[k] = r
    for k in sorted(largest, key=lambda k: (k[0], k[1], k[2])):
        r = largest[k]
        L.append(f"| {r['op']} | {r['dtype']} | {r['rows']}x{r['hidden']} | {r['bytes'] / 2**20:.0f} | {fmt_us(r['ours'])} | "
                 f"{r['bytes'] / r['ours'] / 1e9:.0f} | {r['copy'] / r['ours'] * 100:.1f} | {ratio(r['eager'], r['ours'])} | "
                 f"{ratio(r['best'], r['ours'])} | {ratio(r['compile'], r['ours'])} |")
    L += ["", "## Small launches (device time, in graphs)", "",
          "| op | dtype | shape | ours us | / empty kernel | eager us | best us | compile us |", "|---|---|---|---|---|---|---|---|"]
    for r in res:
        if r["hidden"] == 768 and r["rows"] in (1, 8):
            L.append(f"| {r['op']} | {r['dtype']} | {r['rows']}x768 | {fmt_us(r['ours'])} | {r['ours'] / empty:.2f} | "
                     f"{fmt_us(r['eager'])} | {fmt_us(r['best'])} | {fmt_us(r['compile'])} |")
    # target check
    L += ["", "## Targets", ""]
    big = list(largest.values())
    worst_copy = min(big, key=lambda r: r["copy"] / r["ours"])
    L.append(f"- >= 95% of copy at large sizes: worst {worst_copy['copy'] / worst_copy['ours'] * 100:.1f}% "
             f"({worst_copy['op']} {worst_copy['dtype']} {worst_copy['rows']}x{worst_copy['hidden']}); "
             f"{sum(r['copy'] / r['ours'] >= 0.95 for r in big)}/{len(big)} points meet it.")
    comp = [r for r in res if r["compile"]]
    if comp:
        w = min(comp, key=lambda r: r["compile"] / r["ours"])
        L.append(f"- not slower than static torch.compile: worst {w['compile'] / w['ours']:.2f}x "
                 f"({w['op']} {w['dtype']} {w['rows']}x{w['hidden']}); "
                 f"{sum(r['compile'] >= r['ours'] for r in comp)}/{len(comp)} compiled points.")
        g = [r for r in comp if r["op"] == "bias_gelu" and r["dtype"] == "fp16" and r["rows"] > 8]
        if g:
            L.append(f"- FP16 bias+GELU vs compile (target >= 1.4x): {', '.join(ratio(r['compile'], r['ours']) for r in g)}.")
    ew = [r for r in big if r["op"] in ("bias_gelu", "bias_relu6", "skip_layer_norm", "skip_rms_norm")]
    if ew:
        w = min(ew, key=lambda r: r["eager"] / r["ours"])
        L.append(f"- >= 3x eager chain (bias+act, skip+norm, large): worst {w['eager'] / w['ours']:.2f}x "
                 f"({w['op']} {w['dtype']} {w['rows']}x{w['hidden']}).")
    bb = [r for r in res if r["best"]]
    if bb:
        w = min(bb, key=lambda r: r["best"] / r["ours"])
        L.append(f"- faster than F.layer_norm / F.rms_norm: worst {w['best'] / w['ours']:.2f}x "
                 f"({w['op']} {w['dtype']} {w['rows']}x{w['hidden']}); {sum(r['best'] >= r['ours'] for r in bb)}/{len(bb)} points.")
    sm = [r for r in res if r["hidden"] == 768 and r["rows"] in (1, 8)]
    if sm:
        w = max(sm, key=lambda r: r["ours"])
        L.append(f"- small launches within 1.5x of an empty kernel: worst {w['ours'] / empty:.2f}x ({w['op']} {w['dtype']} {w['rows']}x768).")
    L += ["", "## All points", "",
          "| op | dtype | shape | MB | copy us | ours us | GB/s | % copy | eager us | best us | compile us | vs eager | vs best | vs compile |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res:
        L.append(f"| {r['op']} | {r['dtype']} | {r['rows']}x{r['hidden']} | {r['bytes'] / 2**20:.2f} | {fmt_us(r['copy'])} | "
                 f"{fmt_us(r['ours'])} | {r['bytes'] / r['ours'] / 1e9:.0f} | {r['copy'] / r['ours'] * 100:.1f} | "
                 f"{fmt_us(r['eager'])} | {fmt_us(r['best'])} | {fmt_us(r['compile'])} | {ratio(r['eager'], r['ours'])} | "
                 f"{ratio(r['best'], r['ours'])} | {ratio(r['compile'], r['ours'])} |")
    L += ["", history.strip() if history else "## History\n\n(none yet)", ""]
    (out / "RESULTS.md").write_text("\n".join(L))


def plot(data, out: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = data["results"]
    ops = list(dict.fromkeys(r["op"] for r in res))
    dts = list(dict.fromkeys(r["dtype"] for r in res))
    fig, axes = plt.subplots(len(ops), len(dts), figsize=(5 * len(dts), 3.2 * len(ops)), squeeze=False)
    for i, op in enumerate(ops):
        for j, d in enumerate(dts):
            ax = axes[i][j]
            pts = sorted((r for r in res if r["op"] == op and r["dtype"] == d), key=lambda r: r["bytes"])
            for key, style in (("ours", "o-"), ("eager", "s--"), ("best", "^--"), ("compile", "D")):
                xs = [r["bytes"] for r in pts if r[key]]
                ys = [r["copy"] / r[key] * 100 for r in pts if r[key]]
                if xs:
                    ax.plot(xs, ys, style, label=key, markersize=3)
            ax.axhline(100, color="gray", lw=0.8)
            ax.axhline(95, color="gray", lw=0.5, ls=":")
            ax.set_xscale("log")
            ax.set_title(f"{op} {d}", fontsize=9)
            ax.set_ylabel("% of copy bandwidth", fontsize=8)
            ax.set_xlabel("bytes moved", fontsize=8)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "bandwidth.png", dpi=90)


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
    ap.add_argument("--hiddens", nargs="+", type=int, default=list(HIDDENS))
    ap.add_argument("--compile-hidden", nargs="*", type=int, default=[768, 4096, 16384])
    ap.add_argument("--no-compile", dest="compile", action="store_false")
    ap.add_argument("--report-only", type=Path, default=None, metavar="RESULTS_JSON",
                    help="rewrite RESULTS.md and bandwidth.png from a results.json, timing nothing")
    ap.add_argument("--history", type=Path, default=None, help="markdown whose '## History' section is kept "
                    "(default: the existing OUT/RESULTS.md, else benchmarks/RESULTS.md)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    hist_src = args.history or (args.out / "RESULTS.md" if (args.out / "RESULTS.md").is_file()
                                else Path(__file__).resolve().parents[1] / "benchmarks" / "RESULTS.md")
    history = old_history(hist_src)
    if args.report_only:
        data = json.loads(args.report_only.read_text())
    else:
        data = bench(args)
        (args.out / "results.json").write_text(json.dumps(data, indent=1))
    write_report(data, args.out, history)
    try:
        plot(data, args.out)
    except ImportError as e:
        print(f"no plot ({e}); install matplotlib for bandwidth.png")
    print(f"wrote {args.out}/RESULTS.md (+ results.json, bandwidth.png when timed / matplotlib present)")


if __name__ == "__main__":
    main()
