"""Whole-model timing of trtplugins.torch.fuse on a GPU (issue 33): eager, eager + fuse,
torch.compile, torch.compile + fuse, ms per forward, and the share of GPU time in norms.

Models are built from configs with random weights (no downloads):
  unet:  diffusers UNet2DConditionModel with SD 1.5's configuration, FP16, batch 1 and 2, 64x64
         latents, 77 text tokens;
  llama: transformers LlamaModel, 7B width (hidden 4096, intermediate 11008, 32 heads) with
         --layers layers (default 4), FP16 and BF16, prefill 1x2048 and 8x512.
Timing: CUDA events around each forward after warm-up, the median over --iters; the eager modes once
more in alternated rounds ("alt:" rows, --alt-rounds: the host's speed drifts within a run, and the
eager modes are host-bound on the UNet). torch.compile:
default mode (Inductor, no CUDA graphs), dynamic=False, on the first shape of each model (each
shape compiles anew: --compile-all-shapes for all) and the --compile-dtypes (default float16):
compiling is the expensive part, about a minute per UNet variant. Norm share: torch.profiler over a few forwards;
eager runs count the GPU time inside each norm module's call (and, separately, the SiLU modules'),
compiled runs the kernels whose names say norm (Inductor names its kernels after the ops fused
in: ..._native_group_norm_..., ..._mean_pow_rsqrt_...) and the GPU time of the trtplugins:: ops.
Each result is appended to --out/bench_models.json and the table --out/bench_models.md as it
comes, so a run cut short by --budget-s (or a kill) keeps what it measured.

    python benchmarks/bench_models.py --out build/bench-models [--quick]
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import platform
import re
import statistics
import time
from pathlib import Path

import torch

import trtplugins.torch as tt
from trtplugins.torch import _cpp

SD15 = dict(sample_size=64, in_channels=4, out_channels=4, layers_per_block=2,
            block_out_channels=(320, 640, 1280, 1280), cross_attention_dim=768, attention_head_dim=8,
            norm_num_groups=32, down_block_types=("CrossAttnDownBlock2D",) * 3 + ("DownBlock2D",),
            up_block_types=("UpBlock2D",) + ("CrossAttnUpBlock2D",) * 3)
NORM_KERNEL = re.compile(r"norm|rsqrt", re.I)
NATIVE_NORMS = ("aten::group_norm", "aten::layer_norm", "aten::rms_norm", "aten::silu")


#: --tiny: the same code paths on small configs (a CPU smoke test in CI: tests/test_bench_models.py)
TINY_UNET = dict(SD15, sample_size=8, layers_per_block=1, block_out_channels=(32, 64), cross_attention_dim=32,
                 norm_num_groups=8, down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
                 up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))
LLAMA_7B = dict(hidden_size=4096, intermediate_size=11008, num_attention_heads=32, num_key_value_heads=32,
                vocab_size=32000)
TINY_LLAMA = dict(hidden_size=64, intermediate_size=128, num_attention_heads=4, num_key_value_heads=4, vocab_size=100)
DEVICE = "cuda"


def _sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def build_unet(dtype, tiny=False):
    from diffusers import UNet2DConditionModel

    with torch.device(DEVICE):
        return UNet2DConditionModel(**(TINY_UNET if tiny else SD15)).to(dtype).eval()


def unet_inputs(model, batch, gen):
    cfg, dtype = model.config, model.dtype
    side = cfg.sample_size
    return (torch.randn(batch, cfg.in_channels, side, side, device=DEVICE, generator=gen).to(dtype),
            torch.tensor([500] * batch, device=DEVICE),
            torch.randn(batch, 77, cfg.cross_attention_dim, device=DEVICE, generator=gen).to(dtype))


def build_llama(dtype, layers, tiny=False):
    import transformers as tf

    cfg = tf.LlamaConfig(**(TINY_LLAMA if tiny else LLAMA_7B), num_hidden_layers=layers, use_cache=False,
                         attn_implementation="sdpa")
    with torch.device(DEVICE):
        return tf.LlamaModel(cfg).to(dtype).eval()


def llama_inputs(model, batch, seq, gen):
    return (torch.randint(0, model.config.vocab_size, (batch, seq), device=DEVICE, generator=gen),)


def time_ms(fn, args, warmup, iters) -> tuple[float, float]:
    """(ms per forward, the host's ms to issue it): medians. Host time near the total: the host is the
    limit (the GPU waits for work); well below it: the GPU is."""
    for _ in range(warmup):
        fn(*args)
    _sync()
    times, host = [], []
    for _ in range(iters):
        if DEVICE != "cuda":
            t = time.perf_counter()
            fn(*args)
            times.append(1e3 * (time.perf_counter() - t))
            host.append(times[-1])
            continue
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        t = time.perf_counter()
        fn(*args)
        host.append(1e3 * (time.perf_counter() - t))
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), statistics.median(host)


def rounds(calls: dict, n: int) -> dict[str, list[float]]:
    """Each call's value once per round for n rounds, the order turned by one each round: the host's speed
    drifts within a run, and alternating spreads the drift over every call (compare medians)."""
    names, out = list(calls), {k: [] for k in calls}
    for r in range(n):
        for k in names[r % len(names):] + names[:r % len(names)]:
            out[k].append(calls[k]())
    return out


def alternated(run: Run, case: dict, variants: dict) -> None:
    """The eager modes again in alternated rounds (--alt-rounds rounds of --alt-calls forwards), medians: eager
    rows timed minutes apart carry the host's drift into their ratio. variants: mode -> (model, C++ launches or
    None). Rows "alt:<mode>"."""
    a = run.args

    def timed(model, ext, inputs, forwards):
        _cpp.ext = ext
        try:
            return time_ms(model, inputs, 0, forwards)[0]
        finally:
            _cpp.ext = None

    for label, inputs in case["shapes"].items():
        row0 = {"model": case["name"], "dtype": case["dtype"], "shape": label}
        if run.over_budget():
            run.add({**row0, "mode": "alt:-", "error": f"skipped: over the {a.budget_s:.0f} s budget"})
            continue
        try:
            calls = {m: functools.partial(timed, model, ext, inputs, a.alt_calls)
                     for m, (model, ext) in variants.items()}
            with torch.inference_mode():
                for model, ext in variants.values():
                    timed(model, ext, inputs, 1)  # warm: one forward (the C++ launches' first call per shape)
                per = rounds(calls, a.alt_rounds)
        except Exception as e:  # recorded; the other rows stand
            run.add({**row0, "mode": "alt:-", "error": f"{type(e).__name__}: {e}".split("\n")[0][:300]})
            continue
        for m in per:
            run.add({**row0, "mode": f"alt:{m}", "ms": statistics.median(per[m]), "rounds": per[m]})


def _norm_modules(model):
    kinds = (torch.nn.LayerNorm, torch.nn.GroupNorm, tt.FusedLayerNorm, tt.FusedGroupNorm, tt.FusedRMSNorm)
    for m in model.modules():
        if isinstance(m, kinds) or "rmsnorm" in type(m).__name__.lower():
            yield "trtp_norm", m
        elif isinstance(m, torch.nn.SiLU):
            yield "trtp_silu", m


def norm_share(fn, args, model, compiled: bool, iters: int = 3) -> dict:
    """GPU time share of norms (and SiLU modules, eager) over `iters` profiled forwards."""
    from torch.profiler import ProfilerActivity, profile, record_function

    hooks, live = [], {}
    if not compiled:
        for tag, m in _norm_modules(model):
            def pre(mod, inp, tag=tag):
                live[id(mod)] = record_function(tag)
                live[id(mod)].__enter__()

            def post(mod, inp, out):
                live.pop(id(mod)).__exit__(None, None, None)

            hooks += [m.register_forward_pre_hook(pre), m.register_forward_hook(post)]
    try:
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(iters):
                fn(*args)
            _sync()
    finally:
        for h in hooks:
            h.remove()
    events = prof.key_averages()
    kernels = [e for e in events if e.device_type == torch.autograd.DeviceType.CUDA
               and not getattr(e, "is_user_annotation", False) and not e.key.startswith("trtp_")]
    total = sum(e.self_device_time_total for e in kernels)
    out = {"gpu_us_per_forward": total / iters}
    if compiled:  # Inductor's norm kernels by name; ours (namespace trtp::) by the op that launched them
        ours = sum(e.device_time_total for e in events
                   if e.device_type == torch.autograd.DeviceType.CPU and e.key.startswith("trtplugins::"))
        named = sum(e.self_device_time_total for e in kernels if NORM_KERNEL.search(e.key) and "trtp::" not in e.key)
        out["norm"] = (ours + named) / max(total, 1)
    else:  # the GPU time inside the norm modules' calls; our kernels (launched through ctypes, so no op
        # range holds them) by name: in these models every kernel of ours is a norm's
        ranges = {e.key: e for e in events if e.device_type == torch.autograd.DeviceType.CPU}
        for tag in ("trtp_norm", "trtp_silu"):
            out[tag[5:]] = ranges[tag].device_time_total / max(total, 1) if tag in ranges else 0.0
        out["norm"] += sum(e.self_device_time_total for e in kernels if "trtp::" in e.key) / max(total, 1)
    # host cost of a norm call (the ops' Python path vs aten's C++ one): CPU us per call
    out["host_us_per_call"] = {e.key: round(e.cpu_time_total / max(e.count, 1), 1) for e in events
                               if e.device_type == torch.autograd.DeviceType.CPU and (
                                   e.key.startswith("trtplugins::") or e.key in NATIVE_NORMS)}
    out["top_kernels"] = [(e.key[:90], round(e.self_device_time_total / iters, 1))
                          for e in sorted(kernels, key=lambda e: -e.self_device_time_total)[:8]]
    return out


def _rel_err(got, want) -> float:
    got, want = got.float(), want.float()
    return ((got - want).abs().max() / want.abs().max().clamp_min(1e-6)).item()


class Run:
    def __init__(self, args):
        self.args, self.t0, self.rows = args, time.time(), []
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        gpu = torch.cuda.get_device_name() if DEVICE == "cuda" else DEVICE
        self.env = {"gpu": gpu, "torch": torch.__version__, "cuda": torch.version.cuda,
                    "python": platform.python_version()}
        for name in ("transformers", "diffusers", "triton"):
            try:
                self.env[name] = __import__(name).__version__
            except Exception as e:  # recorded, not fatal
                self.env[name] = f"not importable: {type(e).__name__}"

    def over_budget(self) -> bool:
        return time.time() - self.t0 > self.args.budget_s

    def add(self, row: dict) -> None:
        self.rows.append(row)
        print(json.dumps(row), flush=True)
        (self.out / "bench_models.json").write_text(json.dumps({"env": self.env, "args": vars(self.args),
                                                                 "results": self.rows}, indent=1))
        (self.out / "bench_models.md").write_text(self.table())

    def table(self) -> str:
        lines = [f"# Whole-model timing: trtplugins.torch.fuse ({self.env['gpu']})", "",
                 f"torch {self.env['torch']} (CUDA {self.env['cuda']}), transformers {self.env['transformers']}, "
                 f"diffusers {self.env['diffusers']}, triton {self.env['triton']}. ms per forward: median of "
                 f"{self.args.iters} after {self.args.warmup} warm-up (CUDA events). Norm share: GPU time in norm "
                 "modules (eager) or norm-named kernels (compile), torch.profiler. compile: default mode. graph: the "
                 "eager forward captured in a CUDA graph. host ms: the host's time to issue a forward (near ms: the "
                 "host is the limit). vs unfused: a +fuse mode against the same mode without.", "",
                 "| model | dtype | shape | mode | ms | host ms | vs eager | vs unfused | norm share | SiLU share | max rel err vs eager |",
                 "|---|---|---|---|---|---|---|---|---|---|---|"]
        base = {}
        for r in self.rows:
            key = (r["model"], r["dtype"], r["shape"])
            if "ms" in r:
                base.setdefault(key, {})[r["mode"]] = r["ms"]
        for r in self.rows:
            key = (r["model"], r["dtype"], r["shape"])
            if "ms" not in r:
                lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {r['mode']} | - | | | | | | {r.get('error', '')[:80]} |")
                continue
            b, alt = base[key], r["mode"].startswith("alt:")
            vs = lambda m: f"{b[m] / r['ms']:.3f}x" if m in b else ""  # noqa: E731
            share = r.get("profile", {})
            pct = lambda k: f"{100 * share[k]:.1f}%" if k in share else ""  # noqa: E731
            err = f"{r['rel_err']:.2g}" if "rel_err" in r else ""
            host = f"{r['host_ms']:.3f}" if "host_ms" in r else ""
            lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {r['mode']} | {r['ms']:.3f} | {host} | "
                         f"{vs('alt:eager' if alt else 'eager')} | "
                         f"{vs(r['mode'].removesuffix('+fuse')) if r['mode'].endswith('+fuse') and not alt else ''} | "
                         f"{pct('norm')} | "
                         f"{pct('silu')} | {err} |")
        return "\n".join(lines) + "\n"


def graphed(model, inputs):
    """model(*inputs) captured in a CUDA graph (after warm-up on a side stream): the host's cost per
    forward gone, what is left is the GPU's. Replays read the same input tensors."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            model(*inputs)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = model(*inputs)

    def replay(*_):
        graph.replay()
        return out
    return replay


def measure(run: Run, case: dict, mode: str, model) -> None:
    """One mode on every shape of a case; the eager outputs are the reference of the others. Modes:
    eager, compile, graph (eager code in a CUDA graph), each with "+fuse"; eager+cpp+fuse (--cpp: the fused
    modules' calls through trtplugins.torch.use_cpp())."""
    a = run.args
    compiled = mode.startswith("compile")
    torch._dynamo.reset()
    fn = torch.compile(model, dynamic=False) if compiled else model
    shapes = list(case["shapes"].items())
    if compiled and not a.compile_all_shapes:
        shapes = shapes[:1]  # each shape compiles anew: the first only, unless asked
    for label, inputs in shapes:
        row = {"model": case["name"], "dtype": case["dtype"], "shape": label, "mode": mode}
        if run.over_budget():
            run.add({**row, "error": f"skipped: over the {a.budget_s:.0f} s budget"})
            continue
        try:
            with torch.inference_mode():
                t = time.time()
                run_fn = graphed(model, inputs) if mode.startswith("graph") else fn
                out = run_fn(*inputs)[0]
                row["first_call_s"] = round(time.time() - t, 1)
                if mode == "eager":
                    case["want"][label] = out.clone()
                else:
                    row["rel_err"] = _rel_err(out, case["want"][label])
                row["ms"], row["host_ms"] = time_ms(run_fn, inputs, a.warmup, a.iters)
                if a.profile and not mode.startswith("graph"):  # a graph's kernels: as eager's
                    row["profile"] = norm_share(fn, inputs, model, compiled)
            if mode.endswith("fuse"):
                r = case["report"]
                row.update(fused=r.counts(), silu_folded=r.silu_folded(), skip_folded=r.skip_folded(),
                           products_folded=r.products_folded())
        except Exception as e:  # one failed mode is recorded; the others still run
            row["error"] = f"{type(e).__name__}: {e}".split("\n")[0][:300]
        run.add(row)
    torch._dynamo.reset()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="build/bench-models")
    p.add_argument("--models", default="unet,llama")
    p.add_argument("--layers", type=int, default=4, help="LLaMA decoder layers")
    p.add_argument("--compile-dtypes", default="float16", help="dtypes also timed under torch.compile ('' none)")
    p.add_argument("--compile-all-shapes", action="store_true", help="compiled runs on every shape (default: the first)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--no-profile", dest="profile", action="store_false")
    p.add_argument("--no-graphs", dest="graphs", action="store_false", help="no CUDA-graph modes (graph, graph+fuse)")
    p.add_argument("--budget-s", type=float, default=200.0, help="skip what is left after this many seconds")
    p.add_argument("--quick", action="store_true", help="smoke run: batch 1 / 1x256 only, 1 LLaMA layer")
    p.add_argument("--tiny", action="store_true", help="small configs (smoke test of the script itself)")
    p.add_argument("--device", default="cuda", help="cuda; cpu for the smoke test")
    p.add_argument("--cpp", action="store_true", help="also eager+cpp+fuse: through trtplugins.torch.use_cpp()")
    p.add_argument("--alt-rounds", type=int, default=8, help="rounds of the alternated eager rows (0: none)")
    p.add_argument("--alt-calls", type=int, default=5, help="forwards per model per alternated round")
    a = p.parse_args(argv)
    if a.quick or a.tiny:
        a.layers, a.iters, a.warmup = 1, 3, 1
    global DEVICE
    DEVICE = a.device
    a.graphs = a.graphs and DEVICE == "cuda"
    run = Run(a)
    cpp = tt.use_cpp() if a.cpp else None
    _cpp.ext = None  # set for the eager+cpp+fuse rows only
    torch.backends.cuda.matmul.allow_tf32 = True
    gen = torch.Generator(device=DEVICE).manual_seed(0)
    compiled = {d for d in a.compile_dtypes.split(",") if d}
    later = []  # the compiled runs, after every eager one (compiling is what may run past the budget)
    for name in a.models.split(","):
        for dtype in (torch.float16,) if name == "unet" else (torch.float16, torch.bfloat16):
            dname, quick = str(dtype).removeprefix("torch."), a.quick or a.tiny
            if run.over_budget():
                run.add({"model": name, "dtype": dname, "shape": "-", "mode": "-",
                         "error": f"skipped: over the {a.budget_s:.0f} s budget"})
                continue
            if name == "unet":
                model = build_unet(dtype, a.tiny)
                side = model.config.sample_size
                shapes = {f"{b}x4x{side}x{side}": unet_inputs(model, b, gen) for b in ((1,) if quick else (1, 2))}
            else:
                model = build_llama(dtype, a.layers, a.tiny)
                shapes = {f"{b}x{s}": llama_inputs(model, b, s, gen)
                          for b, s in (((1, 256),) if quick else ((1, 2048), (8, 512)))}
            case = {"name": name if name == "unet" else f"llama-{a.layers}L", "dtype": dname, "shapes": shapes,
                    "want": {}}
            measure(run, case, "eager", model)
            if a.graphs:
                measure(run, case, "graph", model)
            alt_rounds = a.alt_rounds > 0
            unfused = copy.deepcopy(model) if dname in compiled or alt_rounds else None
            case["report"] = tt.fuse(model)
            print(case["report"], flush=True)
            measure(run, case, "eager+fuse", model)
            if cpp is not None:  # the fused modules' eager calls through the C++ launches
                _cpp.ext = cpp
                measure(run, case, "eager+cpp+fuse", model)
                _cpp.ext = None
            if a.graphs:
                measure(run, case, "graph+fuse", model)
            if alt_rounds:
                alternated(run, case, {"eager": (unfused, None), "eager+fuse": (model, None),
                                       **({"eager+cpp+fuse": (model, cpp)} if cpp is not None else {})})
            if unfused is not None and dname in compiled:
                later.append((case, unfused, model))
            else:
                del model, unfused
    for case, unfused, fused in later:
        measure(run, case, "compile", unfused)
        measure(run, case, "compile+fuse", fused)
        del unfused, fused
        if DEVICE == "cuda":
            torch.cuda.empty_cache()
    print(run.table())
    print(f"bench_models: {time.time() - run.t0:.0f} s; results in {run.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
