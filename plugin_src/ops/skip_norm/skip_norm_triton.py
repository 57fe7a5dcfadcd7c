"""SkipNorm in Triton, for ahead-of-time compilation (plugin_src/triton_aot.py): the structure of the
kernels Inductor generates for a LayerNorm / RMSNorm, compiled per hidden size and target into cubins
the plugin library can embed (issue 34: a second design beside the hand-written CUDA, picked per shape
from measurements). Semantics as skip_norm.h: s = x (+ skip) (+ bias); y = norm(s) * gamma (+ beta);
FP32 statistics; `sum` receives s rounded to the I/O type. Skip: like x (its broadcast form stays with
the CUDA kernels).

rows_kernel: XBLOCK rows per program, each row whole in registers (RBLOCK >= HIDDEN, a power of two).
looped_kernel: one row per program, RBLOCK columns at a time: a pass for the statistics (sums about
the row's first value: no cancellation when the mean is far from 0), a second (reading x again, mostly
from L2) for the output."""

import triton
import triton.language as tl


@triton.jit
def _s(x, skip, bias, off, c, m, cm, SKIP: tl.constexpr, BIAS: tl.constexpr, POLICY: tl.constexpr):
    """s at x + off (pointers already at the program's first row, offsets 32-bit)."""
    v = tl.load(x + off, mask=m, other=0.0, eviction_policy=POLICY).to(tl.float32)
    if SKIP:
        v += tl.load(skip + off, mask=m, other=0.0, eviction_policy=POLICY).to(tl.float32)
    if BIAS:
        v += tl.load(bias + c, mask=cm, other=0.0)
    return v


@triton.jit
def rows_kernel(x, skip, bias, gamma, beta, y, s_out, rows, eps, HIDDEN: tl.constexpr, RBLOCK: tl.constexpr,
                XBLOCK: tl.constexpr, RMS: tl.constexpr, SKIP: tl.constexpr, BIAS: tl.constexpr,
                BETA: tl.constexpr, SUM: tl.constexpr):
    first = tl.program_id(0).to(tl.int64) * XBLOCK  # 64-bit only in the program's base
    x += first * HIDDEN
    skip += first * HIDDEN
    y += first * HIDDEN
    s_out += first * HIDDEN
    r = tl.arange(0, XBLOCK)[:, None]
    c = tl.arange(0, RBLOCK)[None, :]
    cm = c < HIDDEN
    m = (first + r < rows) & cm
    off = r * HIDDEN + c
    v = _s(x, skip, bias, off, c, m, cm, SKIP, BIAS, "evict_first")
    if SUM:
        tl.store(s_out + off, v.to(s_out.dtype.element_ty), mask=m)
    if RMS:
        d = v
    else:
        d = tl.where(cm, v - tl.sum(v, 1)[:, None] / HIDDEN, 0.0)
    rstd = tl.rsqrt(tl.sum(d * d, 1)[:, None] / HIDDEN + eps)
    out = d * rstd * tl.load(gamma + c, mask=cm, other=0.0)
    if BETA:
        out += tl.load(beta + c, mask=cm, other=0.0)
    tl.store(y + off, out.to(y.dtype.element_ty), mask=m)


@triton.jit
def looped_kernel(x, skip, bias, gamma, beta, y, s_out, rows, eps, HIDDEN: tl.constexpr, RBLOCK: tl.constexpr,
                  XBLOCK: tl.constexpr, RMS: tl.constexpr, SKIP: tl.constexpr, BIAS: tl.constexpr,
                  BETA: tl.constexpr, SUM: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * HIDDEN
    x += base
    skip += base
    y += base
    s_out += base
    c0 = tl.arange(0, RBLOCK)
    first = _s(x, skip, bias, c0, c0, c0 < 1, c0 < 1, SKIP, BIAS, "evict_last")
    k = 0.0 if RMS else tl.sum(first, 0)  # the row's first value (the only one loaded)
    a1 = tl.zeros([RBLOCK], tl.float32)
    a2 = tl.zeros([RBLOCK], tl.float32)
    for start in range(0, HIDDEN, RBLOCK):  # read again below: kept in L2
        c = start + c0
        cm = c < HIDDEN
        v = _s(x, skip, bias, c, c, cm, cm, SKIP, BIAS, "evict_last")
        if SUM:
            tl.store(s_out + c, v.to(s_out.dtype.element_ty), mask=cm)
        d = tl.where(cm, v - k, 0.0)
        a1 += d
        a2 += d * d
    if RMS:
        mean = 0.0
        var = tl.sum(a2, 0) / HIDDEN
    else:
        dm = tl.sum(a1, 0) / HIDDEN
        mean = k + dm
        var = tl.maximum(tl.sum(a2, 0) / HIDDEN - dm * dm, 0.0)
    rstd = tl.rsqrt(var + eps)
    for start in range(0, HIDDEN, RBLOCK):  # the last read
        c = start + c0
        cm = c < HIDDEN
        v = _s(x, skip, bias, c, c, cm, cm, SKIP, BIAS, "evict_first")
        out = (v - mean) * rstd * tl.load(gamma + c, mask=cm, other=0.0)
        if BETA:
            out += tl.load(beta + c, mask=cm, other=0.0)
        tl.store(y + c, out.to(y.dtype.element_ty), mask=cm)
