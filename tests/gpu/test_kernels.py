"""Every kernel path against its op module's reference (numpy, float64), on a real GPU.

Tolerances, per element, with scale = max(max|ref|, 1) of the tensor compared:
  float32:  |out - ref| <= 1e-5 * scale.  FP32 math with FP32 statistics; rounding of one FP32
            op is 6e-8 relative, erff/tanhf/__expf/rsqrtf add a few ulp, a 16384-term FP32 sum
            a few 1e-7: 1e-5 leaves ~10x margin and still catches any real bug.
  float16:  |out - ref| <= 2e-3 * scale + 2e-3 * |ref|.  The output alone is rounded to fp16
            (half an ulp = 2^-11 = 4.9e-4 relative), so ~1-2 ulp of the output; the atol term
            covers outputs near 0 produced by cancellation (x - mean, x + bias).
  bfloat16: 8x the float16 bounds (bf16 has 3 fewer mantissa bits: half an ulp = 2^-8 = 3.9e-3).
The reference sees the very inputs the kernel sees (rounded to the I/O type, then float64).
Outputs are poisoned with NaN before each launch, so an unwritten element fails.
"""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pytest

from trtplugins import kernels, ops
from trtplugins.ops import bias_activation, skip_norm

DTYPES = ("float32", "float16", "bfloat16")
TOL = {"float32": (1e-5, 0.0), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2)}
HIDDENS = (1, 7, 64, 320, 768, 1024, 2048, 4096, 5120, 16384, 20000)
ROWS = (1, 3, 37, 1025)
# Odd hidden sizes (rows not a multiple of the 16-byte width: head/tail elements, packs across rows)
# and, with offset 1, unaligned pointers (the scalar paths), across the warp, block and long-row paths.
ODD = ((5, 1001), (3, 8190), (2, 12001), (37, 768), (3, 4096), (2, 16384), (2, 20000), (1025, 7))
# Bias+activation with aligned x: 16-byte packs that straddle rows (bias wrapping to column 0), rows
# shorter than a pack, a last partial pack; bias aligned or one float off (its shifted float4 loads).
STRADDLE = ((8, 4100), (3, 5121), (2, 12289), (7, 3), (9, 9), (1, 4100), (5, 1001), (3, 13))


def grid(max_elems: int):
    shapes = [(0, 768)]
    for h in HIDDENS:
        shapes += [(r, h) for r in ROWS if r == 1 or r * h <= max_elems]
    return shapes


def tdtype(torch, name):
    return getattr(torch, name)


def alloc(torch, shape, dtype, offset=0):
    """A NaN-poisoned tensor of `shape`, `offset` elements into its buffer (offset 1: unaligned)."""
    n = int(np.prod(shape))
    buf = torch.full((n + offset + 8,), float("nan"), dtype=dtype, device="cuda")
    return buf[offset : offset + n].view(shape)


def randn(torch, gen, shape, dtype, offset=0, scale=1.0, shift=0.0):
    t = alloc(torch, shape, dtype, offset)
    t.copy_(torch.randn(shape, generator=gen, device="cuda") * scale + shift)
    return t


def f64(t):
    return t.detach().float().cpu().numpy().astype(np.float64)


def check(record, op, variant, dtype, shape, out, ref):
    got = f64(out)
    assert got.shape == ref.shape
    if ref.size == 0:
        record(op, variant, dtype, shape, 0.0, 0.0)
        return
    assert np.isfinite(got).all(), f"{op}/{variant} {dtype} {shape}: non-finite output (unwritten or overflow)"
    atol, rtol = TOL[dtype]
    scale = max(float(np.abs(ref).max()), 1.0)
    diff = np.abs(got - ref)
    ratio = float((diff / (atol * scale + rtol * np.abs(ref))).max())
    err = float(diff.max() / scale)
    record(op, variant, dtype, shape, err, ratio)
    assert ratio <= 1.0, f"{op}/{variant} {dtype} {shape}: max err {err:.3e} x scale, {ratio:.2f} x bound"


# --- bias + activation ----------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("act", ops.ACTIVATIONS)
def test_bias_activation(torch, record, act, with_bias, dtype):
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"{act}{with_bias}{dtype}".encode()))
    dt = tdtype(torch, dtype)
    variant = f"{act}{'+bias' if with_bias else ''}"
    # (shape, offset of x and y, offset of bias)
    cases = [(s, 0, 0) for s in grid(400_000)] + [(s, o, o) for s in ODD for o in (0, 1)]
    cases += [(s, 0, o) for s in STRADDLE for o in (0, 1)]
    for shape, offset, bias_offset in cases:
        x = randn(torch, gen, shape, dt, offset, scale=3.0)  # +-9: the activations' tails too
        bias = randn(torch, gen, (shape[1],), torch.float32, bias_offset) if with_bias else None
        y = alloc(torch, shape, dt, offset)
        bias_activation.kernel(x, bias, act, out=y)
        torch.cuda.synchronize()
        ref = bias_activation.reference(f64(x), None if bias is None else f64(bias), act)
        tag = (f"+{offset}",) if offset else (f"bias+{bias_offset}",) if bias_offset and with_bias else ()
        check(record, "bias_activation", variant, dtype, shape + tag, y, ref)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_bias_activation_in_place(torch, record, dtype):
    gen = torch.Generator(device="cuda").manual_seed(7)
    dt = tdtype(torch, dtype)
    for shape, offset in (((37, 768), 0), ((3, 7), 0), ((2, 4096), 1)):
        x = randn(torch, gen, shape, dt, offset, scale=3.0)
        bias = randn(torch, gen, (shape[1],), torch.float32)
        ref = bias_activation.reference(f64(x), f64(bias), "gelu")
        bias_activation.kernel(x, bias, "gelu", out=x)
        torch.cuda.synchronize()
        check(record, "bias_activation", "gelu+bias in place", dtype, shape, x, ref)


# --- skip + norm ----------------------------------------------------------------------------

# name -> (skip, bias, beta, sum output)
NORM_VARIANTS = {
    "gamma": (False, False, False, False),
    "gamma+beta": (False, False, True, False),
    "skip": (True, False, False, False),
    "skip+beta": (True, False, True, False),  # BERT's SkipLayerNorm: the sum output unused
    "skip+beta+sum": (True, False, True, True),
    "skip+bias+beta+sum": (True, True, True, True),
    "bias+sum": (False, True, False, True),
}


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("variant", NORM_VARIANTS)
@pytest.mark.parametrize("norm", ops.NORMS)
def test_skip_norm(torch, record, norm, variant, dtype):
    has_skip, has_bias, has_beta, has_sum = NORM_VARIANTS[variant]
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"{norm}{variant}{dtype}".encode()))
    dt = tdtype(torch, dtype)
    cases = [(s, 0) for s in grid(2_000_000)] + [(s, o) for s in ODD for o in (0, 1)]
    for shape, offset in cases:
        h = shape[1]
        x = randn(torch, gen, shape, dt, offset, scale=2.0, shift=3.0)  # offset mean: centred variance matters
        skip = randn(torch, gen, shape, dt, offset) if has_skip else None
        gamma = randn(torch, gen, (h,), torch.float32, offset, scale=0.5, shift=1.0)
        beta = randn(torch, gen, (h,), torch.float32, offset, scale=0.5) if has_beta else None
        bias = randn(torch, gen, (h,), torch.float32, offset, scale=0.5) if has_bias else None
        y, s = alloc(torch, shape, dt, offset), alloc(torch, shape, dt, offset) if has_sum else None
        skip_norm.kernel(x, skip, gamma=gamma, beta=beta, bias=bias, norm=norm, epsilon=1e-5,
                          output_sum=has_sum, out=y, sum_out=s)
        torch.cuda.synchronize()
        ry, rs = skip_norm.reference(
            f64(x), None if skip is None else f64(skip), gamma=f64(gamma), beta=None if beta is None else f64(beta),
            bias=None if bias is None else f64(bias), norm=norm, epsilon=1e-5, output_sum=True,
        )
        tag = shape + ((f"+{offset}",) if offset else ())
        check(record, "skip_norm", f"{norm}:{variant}", dtype, tag, y, ry)
        if has_sum:
            check(record, "skip_norm", f"{norm}:{variant}:sum", dtype, tag, s, rs)


def run_norm(torch, gen, norm, dt, shape, skip_shape, variant=-1, offset=0):
    """(skip +) bias + beta + sum through one launch (skip_shape None: no skip); returns (y, s, ry, rs)."""
    h = shape[-1]
    x = randn(torch, gen, shape, dt, offset, scale=2.0, shift=3.0)
    skip = randn(torch, gen, skip_shape, dt, offset) if skip_shape else None
    gamma = randn(torch, gen, (h,), torch.float32, scale=0.5, shift=1.0)
    beta, bias = (randn(torch, gen, (h,), torch.float32, scale=0.5) for _ in range(2))
    y, s = alloc(torch, shape, dt, offset), alloc(torch, shape, dt, offset)
    skip_norm.kernel(x, skip, gamma=gamma, beta=beta, bias=bias, norm=norm, epsilon=1e-5, output_sum=True,
                      out=y, sum_out=s, variant=variant)
    torch.cuda.synchronize()
    ry, rs = skip_norm.reference(f64(x), None if skip is None else np.broadcast_to(f64(skip), shape), gamma=f64(gamma), beta=f64(beta),
                                 bias=f64(bias), norm=norm, epsilon=1e-5, output_sum=True)
    return y, s, ry, rs


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm", ops.NORMS)
def test_skip_norm_every_variant(torch, record, norm, dtype):
    """Every kernel variant the library can pick (warp, block and long-row paths, vector and scalar),
    forced one by one: the table that picks them may change, each must stay exact."""
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"variants{norm}{dtype}".encode()))
    dt = tdtype(torch, dtype)
    shapes = ((3, 7), (37, 768), (5, 1001), (3, 3072), (3, 4096), (2, 5121), (2, 8192), (2, 12289), (2, 16384),
              (1025, 4100))
    for (rows, h), skip in itertools.product(shapes, (True, False)):
        for v in skip_norm.candidates(dtype, norm, skip, h):
            y, s, ry, rs = run_norm(torch, gen, norm, dt, (rows, h), (rows, h) if skip else None, variant=v)
            tag = f"{norm}:variant {v}{'' if skip else ' no skip'}"
            check(record, "skip_norm", tag, dtype, (rows, h), y, ry)
            check(record, "skip_norm", f"{tag}:sum", dtype, (rows, h), s, rs)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", ["layer", "rms", "layer+skip", "rms+skip+sum", "layer+skip+sum"])
def test_skip_norm_aot_forms(torch, record, form, dtype):
    """The variant of the Triton kernels built ahead of time, forced at each of their forms (triton_aot.py FORMS:
    LayerNorm with beta, RMSNorm without; a skip input with the sum output or, LayerNorm, without), 1 and 37
    rows (the small-launch and the large-launch cubins): exact where the library has them, and the pick's
    output where it has none."""
    norm, skip_on, with_sum = form.split("+")[0], "skip" in form, "sum" in form
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"aot{form}{dtype}".encode()))
    dt = tdtype(torch, dtype)
    for rows, h in itertools.product((1, 37), (768, 4096, 16384)):
        x = randn(torch, gen, (rows, h), dt, scale=2.0, shift=3.0)
        skip = randn(torch, gen, (rows, h), dt) if skip_on else None
        gamma = randn(torch, gen, (h,), torch.float32, scale=0.5, shift=1.0)
        beta = randn(torch, gen, (h,), torch.float32, scale=0.5) if norm == "layer" else None
        out = skip_norm.kernel(x, skip, gamma=gamma, beta=beta, norm=norm, epsilon=1e-5, output_sum=with_sum,
                               variant=skip_norm.aot_variant())
        torch.cuda.synchronize()
        ry, rs = skip_norm.reference(f64(x), None if skip is None else f64(skip), gamma=f64(gamma),
                                     beta=None if beta is None else f64(beta), norm=norm, epsilon=1e-5, output_sum=True)
        y, s = out if with_sum else (out, None)
        check(record, "skip_norm", f"{norm}:aot {form}", dtype, (rows, h), y, ry)
        if with_sum:
            check(record, "skip_norm", f"{norm}:aot {form}:sum", dtype, (rows, h), s, rs)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ("float16", "bfloat16"))
@pytest.mark.parametrize("norm", ops.NORMS)
def test_skip_norm_io_weights(torch, norm, dtype):
    """gamma/beta also given in the I/O dtype (exact copies): every variant's output is bit-identical
    to the FP32-weights launch (aligned rows read the 16-bit copies, misaligned rows the FP32 ones)."""
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"io{norm}{dtype}".encode()))
    dt = tdtype(torch, dtype)
    for (rows, h), skip_on, offset in itertools.product(((3, 8), (37, 768), (3, 4096), (2, 5121), (2, 12288),
                                                         (1025, 4100)), (True, False), (0, 1)):
        x = randn(torch, gen, (rows, h), dt, offset, scale=2.0, shift=3.0)
        skip = randn(torch, gen, (rows, h), dt, offset) if skip_on else None
        g16, b16 = randn(torch, gen, (h,), dt, scale=0.5, shift=1.0), randn(torch, gen, (h,), dt, scale=0.5)
        g32, b32 = g16.float(), b16.float()
        for v in skip_norm.candidates(dtype, norm, skip_on, h):
            ref = skip_norm.kernel(x, skip, gamma=g32, beta=b32, norm=norm, output_sum=True, variant=v)
            got = skip_norm.kernel(x, skip, gamma=g32, beta=b32, norm=norm, output_sum=True, variant=v,
                                    gamma_io=g16, beta_io=b16)
            rms = skip_norm.kernel(x, skip, gamma=g32, norm=norm, variant=v, gamma_io=g16)
            ref_rms = skip_norm.kernel(x, skip, gamma=g32, norm=norm, variant=v)
            tag = f"{norm} {dtype} ({rows}, {h}) +{offset} variant {v}{' skip' if skip_on else ''}"
            assert torch.equal(got[0], ref[0]) and torch.equal(got[1], ref[1]), tag
            assert torch.equal(rms, ref_rms), tag + " without beta"
    with pytest.raises(ValueError, match="gamma_io"):  # a copy in another dtype
        skip_norm.kernel(x, None, gamma=g32, norm=norm, gamma_io=g32)
    torch.cuda.synchronize()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm", ops.NORMS)
def test_skip_norm_broadcast_skip(torch, record, norm, dtype):
    """skip of [S, H] or [1, S, H] added to x of [B, S, H] (embeddings + position embeddings)."""
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"bcast{norm}{dtype}".encode()))
    dt = tdtype(torch, dtype)
    for shape, skip_shape, offset in (((4, 77, 768), (77, 768), 0), ((3, 5, 1001), (1, 5, 1001), 1),
                                      ((2, 3, 20000), (3, 20000), 0), ((2, 50, 64), (1, 1, 64), 0), ((6, 1), (1,), 0)):
        y, s, ry, rs = run_norm(torch, gen, norm, dt, shape, skip_shape, offset=offset)
        check(record, "skip_norm", f"{norm}:broadcast skip", dtype, shape, y, ry)
        check(record, "skip_norm", f"{norm}:broadcast skip:sum", dtype, shape, s, rs)


@pytest.mark.gpu
def test_gelu_relative_error_in_the_tail(torch, record):
    """Where GELU's output is tiny (x < 0) its FP32 result must be right relative to itself, not only
    to max(|ref|, 1): the previous erf approximation was 1% off at x = -8."""
    x = torch.linspace(-13.0, 0.0, 65536, device="cuda", dtype=torch.float64).float()
    y = bias_activation.kernel(x.view(1, -1), None, "gelu")
    torch.cuda.synchronize()
    ref = bias_activation.reference(f64(x).reshape(1, -1), None, "gelu")
    got = f64(y)
    nz = np.abs(ref) > 1e-30  # erfc(z) itself stays a normal FP32 number
    # exp(-z^2) magnifies the FP32 rounding of z = x / sqrt 2 (6e-8 relative) to ~1.2e-7 * z^2 relative
    bound = 2e-6 + 2.5e-7 * (f64(x).reshape(1, -1)[nz] ** 2 / 2)
    ratio = float((np.abs(got - ref)[nz] / np.abs(ref[nz]) / bound).max())
    rel = float((np.abs(got - ref)[nz] / np.abs(ref[nz])).max())
    record("bias_activation", "gelu tail relative", "float32", (1, 65536), rel, ratio)
    assert ratio <= 1.0, f"relative error {rel:.2e} in GELU's negative tail ({ratio:.2f} x bound)"


# --- errors are values ----------------------------------------------------------------------


@pytest.mark.gpu
def test_bad_arguments_return_errors(torch):
    x = torch.randn(4, 8, device="cuda")
    with pytest.raises(kernels.KernelError, match="CUDA error"):
        skip_norm.raw_kernel("float32", x.data_ptr(), 0, 0, 0, 0, x.data_ptr(), 0, 4, 8, 1e-5, "layer")
    with pytest.raises(kernels.KernelError, match="CUDA error"):
        bias_activation.raw_kernel("float32", x.data_ptr(), 0, x.data_ptr(), 4, 0, "relu")
    lib = kernels.load()
    assert lib.trtp_bias_activation(5, x.data_ptr(), None, x.data_ptr(), 4, 8, 1, None) != 0  # bad dtype
    assert lib.trtp_bias_activation(0, x.data_ptr(), None, x.data_ptr(), 4, 8, 99, None) != 0  # bad act
    assert lib.trtp_skip_norm(0, x.data_ptr(), None, None, x.data_ptr(), None, x.data_ptr(), None, 4, 8,
                              1e-5, 7, 0, -1, None, None, None) != 0  # bad norm
    assert lib.trtp_skip_norm(0, x.data_ptr(), None, None, x.data_ptr(), None, x.data_ptr(), None, 4, 8,
                              1e-5, 0, -3, -1, None, None, None) != 0  # negative skip rows
    for garbage in (-7, 15, 63, 127, 1000):  # an unknown variant falls back to the chosen one
        skip_norm.raw_kernel("float32", x.data_ptr(), 0, 0, x.data_ptr(), 0, x.data_ptr(), 0, 4, 8, 1e-5,
                              "layer", variant=garbage)
    bias_activation.raw_kernel("float32", 0, 0, 0, 0, 8, "relu")  # rows == 0: nothing to do
    torch.cuda.synchronize()
