"""scripts/bench_kernels.py's report: RESULTS.md's tables, targets and history, the bandwidth plot."""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

from bench_points import GATED_OPS, HIDDENS

ROOT = Path(__file__).resolve().parents[1]


def shape_of(r):
    return r.get("shape") or f"{r['rows']}x{r['hidden']}"


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
    L += ["", history.strip()] if history else []
    sys.path.insert(0, str(ROOT))
    from trtplugins.paths import write_file

    write_file(out / "RESULTS.md", "\n".join(L) + "\n")  # beside, then renamed


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


GENERATED = ("## Targets", "## Large points", "## Small launches")  # the sections write_report() writes


def kept_sections(path: Path | None) -> str:
    """What a report keeps of the RESULTS.md at `path`: every section from the first that write_report() does
    not write (the per-op runs, History, the targets' limits), as it stands."""
    if path is None or not path.is_file():
        return ""
    text = path.read_text()
    heads = [m.start() for m in re.finditer(r"^## .*$", text, re.M)]
    kept = [i for i in heads if not text.startswith(GENERATED, i)]
    return text[kept[0]:] if kept else ""


