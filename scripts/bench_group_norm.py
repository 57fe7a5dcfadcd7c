#!/usr/bin/env python3
"""GroupNorm (+ SiLU) against its peers, side by side in one process on one GPU: our kernels as the plugin runs
them (channels-first: the split design, or the resident one where the plugin picks it; channels-last: the
resident design), the channels-last one forced to its two launches, each design forced channels-first, the
resident fused plans cut into 2 and 4 times as many CTAs (small shapes) or (channels-last) into channel windows,
whole segments per CTA (groups; channels-last a sample's window of whole groups: no grid-wide barrier), each
group (channels-last a sample's window of groups) one thread-block cluster of 2, 4 or 8 CTAs, eager F.group_norm
on channels-first and channels-last tensors, torch.compile(mode="max-autotune-no-cudagraphs") where --compile-at
allows it, Liger-Kernel's group norm (no SiLU), TensorRT OSS's groupNorm plugin kernels (channels-last FP16, its
last version: the harness in ../shared/peers/trtoss_groupnorm, copied into .peers/ to travel; never part of the
project), a device copy of the same bytes and (GroupNorm rows) the one-launch designs' floors: x copied through
shared memory by a plan's CTAs with its barrier between the loads and the stores. 32 groups; SD 1.5/2.x UNet
shapes (C 320..2560, 64x64..8x8 latents) at batch 1, 2, 4 and 8, SD-XL (128x128..32x32 latents) at batch 1 and
2, and the VAE decoder.
Each launch is checked against eager first (bench_timing.mismatch); CUDA-graph medians.

  python3 scripts/bench_group_norm.py --out DIR [--quick] [--dtypes fp16 bf16] [--compile-at N C H W ...] [--temb]

--temb adds GroupNorm+SiLU after a per-channel skip [N, C, 1, 1] (the UNet resnet's second norm, its time embedding
added first): ours as the plugin runs it, eager and the compile.

Writes DIR/group_norm.json, DIR/group_norm.md (one row per op, dtype and shape: each peer's time,
% of copy, and the ratios the targets name) and DIR/group_norm.png (% of copy per shape, FP16; with
matplotlib). --plot JSON draws a committed run's plot beside it.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if __name__ == "__main__" and "--help" not in sys.argv and "-h" not in sys.argv:
    import torch
    import torch.nn.functional as F

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench_timing import compiled, copy_time, graph_time, mismatch  # noqa: E402

    from trtplugins import kernels  # noqa: E402
    from trtplugins.ops import group_norm  # noqa: E402

GROUPS, EPS = 32, 1e-5
OPS = ("group_norm", "group_norm_silu")
TEMB = "group_norm_silu_temb"  # + a per-channel skip [N, C, 1, 1] before (the UNet resnet's second norm), SiLU after
CLUSTERS = (2, 4, 8)  # cluster plans timed: CTAs per group (channels-last: per sample's window of groups)
# the one-launch designs' floors (group_norm.floor): x copied through shared memory by a plan's CTAs with its
# barrier between the loads and the stores: none (2 CTAs a group), a CTA's (one a group), a cluster of 2's, the grid's
FLOORS = ("none", "cta", "cluster", "grid")
SD15 = [(320, 64), (640, 32), (1280, 16), (1280, 8), (2560, 8), (1920, 16), (960, 32), (640, 64)]
SDXL = [(320, 128), (640, 64), (1280, 32)]
VAE = [(512, 64), (512, 128), (512, 256), (256, 256), (256, 512), (128, 512), (128, 1024)]
QUICK = [(2, 320, 64, 64), (2, 640, 32, 32), (2, 1280, 16, 16), (2, 1280, 8, 8), (8, 320, 64, 64),
         (2, 320, 128, 128), (1, 512, 128, 128), (1, 256, 256, 256), (1, 128, 512, 512)]
PEERS = ("ours_cf", "ours_cl", "cl_two_launches", "resident_cf", "split_cf", "resident_cf_x2", "resident_cl_x2",
         "resident_cf_2g", "resident_cf_4g", "resident_cl_2g", "resident_cl_4g", "resident_cf_whole",
         "resident_cl_whole", "resident_cl_windows", "resident_cl_all",
         *(f"resident_{t}_c{k}" for t in ("cf", "cl") for k in CLUSTERS), *(f"floor_{b}" for b in FLOORS),
         "eager_cf", "eager_cl", "compile_cf", "liger", "trtoss_cl")


def shapes(quick: bool):
    if quick:
        return [(s, "quick") for s in QUICK]
    out = [((b, c, h, h), "sd15") for b in (1, 2, 4, 8) for c, h in SD15]
    out += [((b, c, h, h), "sdxl") for b in (1, 2) for c, h in SDXL]
    return out + [((1, c, h, h), "vae") for c, h in VAE]


def peers_available():
    """Liger's group norm forward and TensorRT OSS's binding, where installed (said once when not)."""
    lig = oss = None
    try:
        from liger_kernel.ops.group_norm import group_norm_forward as lig
    except ImportError as e:
        print(f"WARNING: no Liger-Kernel peer ({e})", file=sys.stderr)
    sys.path.insert(0, str(ROOT / ".peers" / "trtoss_groupnorm"))
    try:
        import trtoss_gn as oss
    except Exception as e:  # noqa: BLE001 (its build may fail: a missing peer must not stop the run)
        print(f"WARNING: no TensorRT OSS peer ({e})", file=sys.stderr)
    return lig, oss


def point(shape, dt, op, lig, oss, compile_it, only=()):
    """One row: every peer's seconds per launch (or why it has none); `only`: these columns alone (ours and plans
    forced, for an A/B), no peer but the copy. op TEMB: ours as the plugin runs it and eager (no plan forced)."""
    n, c, h, w = shape
    silu, temb = op != "group_norm", op == TEMB
    g = torch.Generator(device="cuda").manual_seed(0)
    x = (torch.randn(shape, generator=g, device="cuda") + 1.0).to(dt)
    skip = torch.randn((n, c, 1, 1), generator=g, device="cuda").to(dt) if temb else None
    xcl = x.contiguous(memory_format=torch.channels_last)
    gamma = torch.randn(c, generator=g, device="cuda") * 0.1 + 1.0
    beta = torch.randn(c, generator=g, device="cuda") * 0.1
    wt, bt = gamma.to(dt), beta.to(dt)
    act = "silu" if silu else "none"
    y, ycl = torch.empty_like(x), torch.empty_like(xcl)
    ws = torch.empty(group_norm.workspace_size(n, GROUPS), dtype=torch.uint8, device="cuda")

    def eager(v):
        out = F.group_norm(v + skip if temb else v, GROUPS, wt, bt, EPS)
        return F.silu(out) if silu else out

    ours = lambda v, out, **kw: group_norm.kernel(v, skip, num_groups=GROUPS, gamma=gamma, beta=beta,  # noqa: E731
                                                   activation=act, out=out, workspace=ws, **kw)
    dname = str(dt).removeprefix("torch.")
    two = group_norm.resident_plan(n, c, h * w, GROUPS, dname, layout="channels_last", configured=False)
    fns = {"ours_cl": lambda: ours(xcl, ycl), "ours_cf": lambda: ours(x, y),
           "cl_two_launches": lambda: ours(xcl, ycl, resident=two),
           "resident_cf": lambda: ours(x, y, resident=True), "split_cf": lambda: ours(x, y, resident=False),
           "eager_cf": lambda: eager(x), "eager_cl": lambda: eager(xcl)}
    rec = {"op": op, "shape": list(shape),
           "mb": x.numel() * x.element_size() / 1e6}
    cl_ok = group_norm.channels_last_ok(dname, c)  # FP32 from 2560 channels: a pixel's packs past a CTA's threads
    if temb or not cl_ok:  # (temb: the two launches forced are a plan for no skip)
        del fns["cl_two_launches"]
    if not cl_ok:
        del fns["ours_cl"]
        rec["ours_cl_none"] = f"no channels-last kernel for {c} channels of {dname}"
    want = eager(x)

    def wrong(key, got):
        bad = mismatch(got.contiguous(), want)
        if bad:
            rec[f"{key}_wrong"] = bad
            print(f"  WRONG {key} {shape}: {bad}", flush=True)
        return bad

    for key in ("ours_cf", "ours_cl", "cl_two_launches", "resident_cf", "split_cf"):
        if key in fns and wrong(key, fns[key]()):
            del fns[key]

    def forced(key, v, out, plan):
        """A plan forced on the launch: checked, and timed only where it ran as forced (a fused plan the GPU
        cannot hold at once runs as two launches)."""
        got, ran = ours(v, out, resident=plan, return_plan=True)
        rec[f"ran_{key}"] = list(ran)
        if not wrong(key, got) and tuple(ran) == tuple(plan):
            fns[key] = lambda: ours(v, out, resident=plan)

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    layouts = [] if temb else [("channels_first", x, y)] + ([("channels_last", xcl, ycl)] if cl_ok else [])
    for layout, v, out in layouts:  # each plan forced (none with a time embedding: plans for no skip)
        tag = "cl" if layout == "channels_last" else "cf"
        # the fused plan of two CTAs per SM (half the shared memory each; 16-bit channels-last narrow)
        plan = group_norm.resident_plan(n, c, h * w, GROUPS, dname, layout=layout, ctas_per_sm=2)
        if plan[3]:
            forced(f"resident_{tag}_x2", v, out, plan)
        # the resident fused plan cut into 2 and 4 times as many CTAs (fewer pieces each: at small shapes
        # the fixed cost per piece, not the bytes, is the time)
        base = ours(v, out, resident=True, return_plan=True)[1]
        for k in (2, 4):
            plan = more_ctas(base, k, n, c, h * w, layout, x.element_size(), sms)
            if plan:
                forced(f"resident_{tag}_{k}g", v, out, plan)
        # whole segments per CTA (groups; channels-last a sample's window of whole groups): one launch, a CTA
        # barrier instead of the grid-wide one, any number of CTAs; up to 8 MB (few CTAs for a VAE's tensor)
        plan = group_norm.resident_plan(n, c, h * w, GROUPS, dname, layout=layout, whole_segments=True)
        if plan[0] and rec["mb"] <= 8:
            forced(f"resident_{tag}_whole", v, out, plan)
        for k in CLUSTERS:  # each group (a sample's window of groups) one cluster of k CTAs: a cluster barrier
            plan = group_norm.resident_plan(n, c, h * w, GROUPS, dname, layout=layout, cluster=k)
            if plan[0]:
                forced(f"resident_{tag}_c{k}", v, out, plan)
        if layout == "channels_last":  # the fused plan with each range's channels cut into windows, and over all
            for key, windows in (("resident_cl_windows", 0), ("resident_cl_all", -1)):  # of them (the pick's other)
                plan = group_norm.resident_plan(n, c, h * w, GROUPS, dname, layout=layout, windows=windows)
                if plan[3] and plan != base:
                    forced(key, v, out, plan)
    if only:
        lig = oss = None
        compile_it = False
        fns = {k: f for k, f in fns.items() if k in only}
    elif not silu:  # the same bytes either op
        floors(x, y, n * GROUPS, sms, rec, fns)
    if lig is not None and not silu:
        fns["liger"] = lambda: lig(x, c, GROUPS, wt, bt, EPS)[0]
    if oss is not None and dt == torch.float16 and not temb:  # its kernel adds nothing before the norm
        ok, why = oss.supported(n, h, w, c, GROUPS)
        if ok:
            fns["trtoss_cl"] = oss.bind(xcl.permute(0, 2, 3, 1), GROUPS, gamma, beta, EPS, silu,
                                        workspace=oss.make_workspace(n))
        else:
            rec["trtoss_cl_none"] = why
    if compile_it:
        try:
            cfn = compiled(eager, (x,))
            fns["compile_cf"] = lambda: cfn(x)
        except Exception as e:  # noqa: BLE001
            rec["compile_error"] = str(e)[:200]
    nbytes = 2 * x.numel() * x.element_size()
    rec["copy"] = copy_time(nbytes)
    for key, fn in fns.items():
        rec[key] = graph_time(fn, nbytes / 3e12 + 3e-6)
    # the plans that ran (a fused plan whose cooperative launch is refused runs as two launches)
    if cl_ok:
        rec["ran_cl"] = ours(xcl, ycl, return_plan=True)[1]
    rec["ran_resident_cf"] = ours(x, y, resident=True, return_plan=True)[1]
    return rec


def floor_ctas(barrier: str, segments: int, sms: int) -> tuple[int, int]:
    """(CTAs, cluster) of a barrier's floor: as its design runs (2 CTAs a group, one, a cluster of 2, one per SM)."""
    return {"none": (2 * segments, 0), "cta": (segments, 0), "cluster": (2 * segments, 2), "grid": (sms, 0)}[barrier]


def floors(x, y, segments, sms, rec, fns):
    """The floors' launches into fns where each runs here and copies x exactly (a share past a CTA's shared memory
    or, for the grid's, more CTAs than fit: none; why in rec)."""
    for barrier in FLOORS:
        ctas, cluster = floor_ctas(barrier, segments, sms)
        launch = functools.partial(group_norm.floor, x, y, barrier, ctas, cluster)
        try:
            y.zero_()
            launch()
        except kernels.KernelError as e:
            rec[f"floor_{barrier}_none"] = str(e)[:120]
            continue
        if torch.equal(y.view(torch.int16), x.view(torch.int16)):
            fns[f"floor_{barrier}"] = launch
        else:
            rec[f"floor_{barrier}_wrong"] = "y != x"
            print(f"  WRONG floor {barrier}: y != x", flush=True)


def more_ctas(plan, k, n, c, spatial, layout, elem, sms):
    """A fused resident plan (grid, per, resident, fused, narrow, cluster) cut into k times as many CTAs, or
    None (not fused, in clusters, more CTAs than SMs, or no such cut: channels-last ranges stay inside a
    sample, channels-first ranges hold whole 16-byte packs)."""
    grid, per, resident, fused, narrow, cluster = plan
    if not fused or cluster or per < k:
        return None
    cl = layout == "channels_last"
    units, align = (n * spatial, 1) if cl else (n * c * spatial, 16 // elem)
    cut = per // k // align * align
    if cut < 1 or (cl and spatial % cut and cut % spatial) or grid * k > sms:
        return None
    return (-(-units // cut), cut, cut if resident >= per else min(resident, cut), True, narrow, 0)


def pct(r, k):
    return f"{100 * r['copy'] / r[k]:.0f}" if r.get(k) else "-"


def ratio(r, peer, ours):
    return f"{r[peer] / r[ours]:.2f}x" if r.get(peer) and r.get(ours) else "-"


def table(rows):
    head = ("| op | dtype | shape | MB | ours cf us | ours cl us | % copy cf / cl / cl two launches / resident cf / split cf / "
            "resident cf, cl at 2 CTAs per SM | eager cf / cl | "
            "compile | liger | trtoss cl | vs compile | vs eager | vs trtoss (cl) | % copy resident cf / cl at 2x, 4x CTAs | "
            "% copy whole segments per CTA cf / cl | % copy cl fused in channel windows / over all channels | "
            f"% copy in clusters of {', '.join(map(str, CLUSTERS))} CTAs per group (cl: per window) cf / cl | "
            "% copy floors: staged copy, + a CTA's / a cluster of 2's / the grid's barrier |")
    lines = [head, "|" + "---|" * 19]
    for r in rows:
        us = lambda k: f"{r[k] * 1e6:.2f}" if r.get(k) else "-"  # noqa: E731
        cells = [r["op"], r["dtype"], "x".join(map(str, r["shape"])), f"{r['mb']:.1f}", us("ours_cf"), us("ours_cl"),
                 f"{pct(r, 'ours_cf')} / {pct(r, 'ours_cl')} / {pct(r, 'cl_two_launches')} / {pct(r, 'resident_cf')} / "
                 f"{pct(r, 'split_cf')} / {pct(r, 'resident_cf_x2')}, {pct(r, 'resident_cl_x2')}",
                 f"{pct(r, 'eager_cf')} / {pct(r, 'eager_cl')}",
                 pct(r, "compile_cf"), pct(r, "liger"), pct(r, "trtoss_cl"), ratio(r, "compile_cf", "ours_cf"),
                 ratio(r, "eager_cf", "ours_cf"), ratio(r, "trtoss_cl", "ours_cl"),
                 f"{pct(r, 'resident_cf_2g')}, {pct(r, 'resident_cf_4g')} / {pct(r, 'resident_cl_2g')}, {pct(r, 'resident_cl_4g')}",
                 f"{pct(r, 'resident_cf_whole')} / {pct(r, 'resident_cl_whole')}",
                 f"{pct(r, 'resident_cl_windows')} / {pct(r, 'resident_cl_all')}",
                 " / ".join(", ".join(pct(r, f"resident_{t}_c{k}") for k in CLUSTERS) for t in ("cf", "cl")),
                 " / ".join(pct(r, f"floor_{b}") for b in FLOORS)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


PLOTTED = (("ours_cf", "o-", "C0", "ours channels-first"), ("ours_cl", "o--", "C4", "ours channels-last"),
           ("compile_cf", "D", "C2", "max-autotune compile"), ("trtoss_cl", "v-", "C5", "TensorRT OSS (cl)"),
           ("liger", "^-", "C3", "Liger-Kernel"), ("eager_cf", "s:", "C1", "eager"))


def plot(rows, path: Path, dtype="fp16") -> bool:
    """% of copy per shape (ascending size), one panel per op, for `dtype`'s rows: path (PNG); False
    without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    ops = list(dict.fromkeys(r["op"] for r in rows))
    fig, axes = plt.subplots(len(ops), 1, figsize=(13, 3.6 * len(ops)), squeeze=False)
    for ax, op in zip(axes[:, 0], ops):
        pts = sorted((r for r in rows if r["op"] == op and r["dtype"] == dtype), key=lambda r: (r["mb"], r["shape"]))
        xs = range(len(pts))
        for key, style, color, label in PLOTTED:
            ys = [100 * r["copy"] / r[key] if r.get(key) else float("nan") for r in pts]
            if any(y == y for y in ys):
                ax.plot(xs, ys, style, color=color, label=label, markersize=3)
        ax.axhline(100, color="gray", lw=0.8)
        ax.set_xticks(list(xs), ["x".join(map(str, r["shape"])) for r in pts], rotation=70, fontsize=6)
        ax.set_ylim(0, 105)
        ax.set_ylabel("% of copy bandwidth", fontsize=8)
        ax.set_title(f"{op} {dtype}", fontsize=9)
        ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("build/bench_group_norm"))
    ap.add_argument("--plot", type=Path, metavar="JSON", help="draw JSON's plot beside it (NAME.png), timing nothing")
    ap.add_argument("--quick", action="store_true", help="9 shapes (SD batch 2 and 8, SD-XL, VAE) instead of 45")
    ap.add_argument("--dtypes", nargs="+", default=["fp16", "bf16"], choices=["fp32", "fp16", "bf16"])
    ap.add_argument("--only", nargs="+", default=[], metavar="KEY",
                    help="time only these columns (ours_cf, ours_cl, resident_cf_c2, ...): an A/B's, without the peers")
    ap.add_argument("--temb", action="store_true",
                    help=f"also {TEMB}: a per-channel skip [N, C, 1, 1] (the UNet's time embedding) before, SiLU after")
    ap.add_argument("--compile-at", nargs="*", type=int, default=[], metavar="N C H W",
                    help="shapes (4 numbers each) where max-autotune torch.compile runs (FP16 only; 5-30 s each)")
    args = ap.parse_args()
    if args.plot:
        out = args.plot.with_suffix(".png")
        print(f"wrote {out}" if plot(json.loads(args.plot.read_text())["rows"], out) else "no matplotlib: no plot")
        return
    dts = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    at = {tuple(args.compile_at[i:i + 4]) for i in range(0, len(args.compile_at) - 3, 4)}
    lig, oss = peers_available()
    args.out.mkdir(parents=True, exist_ok=True)
    rows, t0 = [], time.time()
    env = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    for shape, family in shapes(args.quick):
        for name in args.dtypes:
            for op in OPS + ((TEMB,) if args.temb else ()):
                r = point(shape, dts[name], op, lig, oss, tuple(shape) in at and name == "fp16", set(args.only))
                r.update(dtype=name, family=family)
                rows.append(r)
                print(table([r])[-1], flush=True)
                (args.out / "group_norm.json").write_text(json.dumps({"env": env, "rows": rows}, indent=1))
                torch.cuda.empty_cache()
    (args.out / "group_norm.md").write_text("\n".join(table(rows)) + "\n")
    plot(rows, args.out / "group_norm.png")
    wrong = [r for r in rows if any(k.endswith("_wrong") for k in r)]
    print(f"{len(rows)} points in {time.time() - t0:.0f} s; {len(wrong)} with a wrong launch")
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
