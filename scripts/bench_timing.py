"""scripts/bench_kernels.py's measuring: the check that ours computes what the eager chain does
before it is timed, CUDA-graph timing, the copy reference, torch.compile."""

from __future__ import annotations

import statistics

import torch


# --- output check -------------------------------------------------------------------------------

#: |ours - chain| <= TOL * (1 + |chain|): a few units in the last place of the output dtype (the chains
#: round some intermediates to it; ours keeps them in FP32)
TOL = {torch.float32: 1e-4, torch.float16: 4e-3, torch.bfloat16: 3e-2}


def mismatch(got, want) -> str | None:
    """None where every output of ours (a tensor, or a tuple like the chain's) matches the chain's
    within TOL; else one line saying where it does not (NaN where the chain has none counts)."""
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    if len(got) != len(want):
        return f"ours gives {len(got)} output(s), the chain {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            return f"output {i}: shape {tuple(g.shape)}, the chain's {tuple(w.shape)}"
        g, w = g.flatten().float(), w.flatten().float()
        bad = ~((g - w).abs() <= TOL[want[i].dtype] * (1 + w.abs()))
        if bool(bad.any()):
            k = int(bad.nonzero()[0])
            return (f"output {i}: {int(bad.sum())} of {g.numel()} elements off, first at {k}: "
                    f"{g[k].item():.6g} vs {w[k].item():.6g}")
    return None


def checked(what: str, ours, chain, cargs, wrong: dict | None = None) -> str | None:
    """Runs ours and the eager chain once and compares them (mismatch); where they differ, prints a
    line and records it in `wrong` (what -> the mismatch)."""
    bad = mismatch(ours(), chain(*cargs))
    if bad:
        print(f"  WRONG {what}: {bad}", flush=True)
        if wrong is not None:
            wrong[what] = bad
    return bad


# --- timing -------------------------------------------------------------------------------------


def graph_time(fn, est_s: float, replays: int = 9) -> float:
    """Median seconds per call of fn over graph replays of k back-to-back calls."""
    k = max(1, min(200, int(1e-3 / max(est_s, 1e-6))))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
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
    """A plain vectorised copy kernel: the driver's memcpy for D2D is slower at some sizes, so the
    limit is the faster of the two."""
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


def compiled(chain, args):
    """torch.compile(chain) for this shape, compiled afresh; raises if Dynamo fell back to eager."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    before = counters["stats"]["unique_graphs"]
    cfn = torch.compile(chain, dynamic=False, fullgraph=True, mode="max-autotune-no-cudagraphs")
    cfn(*args)
    if counters["stats"]["unique_graphs"] <= before:
        raise RuntimeError("torch.compile produced no graph (eager fallback)")
    return cfn


def inductor_cache() -> str:
    """Inductor's cache directory (generated kernels and the autotuner's *.best_config picks)."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return cache_dir()


