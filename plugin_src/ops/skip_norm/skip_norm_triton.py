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
def _s(x, skip, bias, off, c, m, cm, SKIP: tl.constexpr, BIAS: tl.constexpr):
    v = tl.load(x + off, mask=m, other=0.0).to(tl.float32)
    if SKIP:
        v += tl.load(skip + off, mask=m, other=0.0).to(tl.float32)
    if BIAS:
        v += tl.load(bias + c, mask=cm, other=0.0)
    return v


@triton.jit
def rows_kernel(x, skip, bias, gamma, beta, y, s_out, rows, eps, HIDDEN: tl.constexpr, RBLOCK: tl.constexpr,
                XBLOCK: tl.constexpr, RMS: tl.constexpr, SKIP: tl.constexpr, BIAS: tl.constexpr,
                BETA: tl.constexpr, SUM: tl.constexpr):
    r = tl.program_id(0).to(tl.int64) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    c = tl.arange(0, RBLOCK)[None, :]
    cm = c < HIDDEN
    m = (r < rows) & cm
    off = r * HIDDEN + c
    v = _s(x, skip, bias, off, c, m, cm, SKIP, BIAS)
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
    row = tl.program_id(0).to(tl.int64)
    base = row * HIDDEN
    c0 = tl.arange(0, RBLOCK)
    first = _s(x, skip, bias, base + c0, c0, c0 < 1, c0 < 1, SKIP, BIAS)
    k = 0.0 if RMS else tl.sum(first, 0)  # the row's first value (the only one loaded)
    a1 = tl.zeros([RBLOCK], tl.float32)
    a2 = tl.zeros([RBLOCK], tl.float32)
    for start in range(0, HIDDEN, RBLOCK):
        c = start + c0
        cm = c < HIDDEN
        v = _s(x, skip, bias, base + c, c, cm, cm, SKIP, BIAS)
        if SUM:
            tl.store(s_out + base + c, v.to(s_out.dtype.element_ty), mask=cm)
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
    for start in range(0, HIDDEN, RBLOCK):
        c = start + c0
        cm = c < HIDDEN
        v = _s(x, skip, bias, base + c, c, cm, cm, SKIP, BIAS)
        out = (v - mean) * rstd * tl.load(gamma + c, mask=cm, other=0.0)
        if BETA:
            out += tl.load(beta + c, mask=cm, other=0.0)
        tl.store(y + base + c, out.to(y.dtype.element_ty), mask=cm)
