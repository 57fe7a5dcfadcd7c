"""GatedActivation (issue 16 item 2) on the GPU: the bare kernel against its reference
(trtplugins.ops.gated_activation) for every
activation, both forms (two tensors, the halves of one), either operand activated, with and without
biases, over a shape grid with odd widths (scalar path) and unaligned pointers; in place, values near
the FP16 limit, an empty batch, more than 2^32 elements; bad arguments; and the plugin's enqueue (both
majors, both interfaces) bit-identical to the bare kernel.

Tolerances as tests/gpu/test_kernels.py (check()): FP32 1e-5 x scale, FP16 2e-3 x scale + 2e-3 |ref|,
BF16 8x that; scale = max(max|ref|, 1). The math is FP32 (act as BiasActivation computes it, then one
product), the output rounded once to the I/O type.
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from trtplugins import kernels, ops
from trtplugins.ops import gated_activation

from .test_kernels import DTYPES, alloc, check, f64, randn, tdtype

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from plugin_harness import BF16, FLOAT, HALF  # noqa: E402

WIDTHS = (1, 7, 8, 64, 1001, 1280, 4096, 11008, 12001, 20000)
ROWS = (0, 1, 3, 37, 257)
FORMS = ("halves", "two")


def grid(max_elems=1_000_000):
    return [(r, w) for w in WIDTHS for r in ROWS if r <= 1 or r * w <= max_elems]


def operands(torch, gen, form, rows, width, dt, offset=0, scale=3.0):
    """x (and x2): rows x 2 width for the halves, or two rows x width tensors."""
    if form == "halves":
        return randn(torch, gen, (rows, 2 * width), dt, offset, scale=scale), None
    return randn(torch, gen, (rows, width), dt, offset, scale=scale), randn(torch, gen, (rows, width), dt, offset)


def ref_of(x, x2, act, gate, gate_bias, linear_bias):
    return gated_activation.reference(f64(x), None if x2 is None else f64(x2), activation_name=act, gate=gate,
                                      gate_bias=None if gate_bias is None else f64(gate_bias),
                                      linear_bias=None if linear_bias is None else f64(linear_bias))


def run_kernel(torch, x, x2, act, gate, gate_bias=None, linear_bias=None, offset=0, out=None):
    width = x.shape[-1] if x2 is not None else x.shape[-1] // 2
    y = alloc(torch, (*x.shape[:-1], width), x.dtype, offset) if out is None else out
    gated_activation.kernel(x, x2, activation=act, gate=gate, gate_bias=gate_bias, linear_bias=linear_bias, out=y)
    torch.cuda.synchronize()
    return y


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("act", ops.GATED_ACTIVATIONS)
def test_gated_kernel(torch, record, act, form, with_bias, dtype):
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"gated{act}{form}{with_bias}{dtype}".encode()))
    dt = tdtype(torch, dtype)
    cases = [(s, 0) for s in grid()] + [((r, w), 1) for r, w in ((3, 1280), (5, 1001), (37, 64), (2, 11008))]
    for (rows, width), offset in cases:  # offset 1: unaligned pointers (scalar path)
        x, x2 = operands(torch, gen, form, rows, width, dt, offset)
        gb, lb = (randn(torch, gen, (width,), torch.float32, offset) if with_bias else None for _ in range(2))
        for gate in ("first", "second"):
            y = run_kernel(torch, x, x2, act, gate, gb, lb, offset)
            variant = f"{act}:{form}:{gate}{'+bias' if with_bias else ''}"
            check(record, "gated_activation", variant, dtype, (rows, width) + ((f"+{offset}",) if offset else ()), y,
                  ref_of(x, x2, act, gate, gb, lb))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gated_one_bias_and_mixed_alignment(torch, record, dtype):
    """One bias without the other; a bias pointer off 16 bytes (the scalar path for aligned data)."""
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"onebias{dtype}".encode()))
    dt = tdtype(torch, dtype)
    x, _ = operands(torch, gen, "halves", 37, 1280, dt)
    gb = randn(torch, gen, (1280,), torch.float32, offset=1)
    for gate_bias, linear_bias in ((gb, None), (None, gb)):
        y = run_kernel(torch, x, None, "gelu", "second", gate_bias, linear_bias)
        check(record, "gated_activation", "gelu:halves:one bias off 16 B", dtype, (37, 1280), y,
              ref_of(x, None, "gelu", "second", gate_bias, linear_bias))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gated_in_place(torch, record, dtype):
    """Two tensors: y written over either operand (each element is read before it is written)."""
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"inplace{dtype}".encode()))
    dt = tdtype(torch, dtype)
    for shape, offset in (((37, 4096), 0), ((3, 7), 0), ((5, 1001), 1)):
        for over in (0, 1):
            x, x2 = operands(torch, gen, "two", *shape, dt, offset)
            ref = ref_of(x, x2, "silu", "first", None, None)
            y = run_kernel(torch, x, x2, "silu", "first", out=(x, x2)[over])
            check(record, "gated_activation", f"silu:two in place over x{over + 1 if over else ''}", dtype, shape, y, ref)


@pytest.mark.gpu
@pytest.mark.parametrize("act", ops.GATED_ACTIVATIONS)
def test_gated_near_the_fp16_limit(torch, record, act):
    """|gate| up to 60000 (exp over- and underflow in SiLU and GELU: the right limits, no NaN) times
    |linear| <= 1; and |linear| up to 60000 times a gate whose activation stays below 1."""
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"fp16limit{act}".encode()))
    rows, width = 64, 1024
    for gate_range, linear_range in ((60000.0, 1.0), (0.9, 60000.0)):
        x32 = torch.empty((rows, 2 * width), device="cuda")  # FP32: an FP16 uniform_ refuses a 120000 span
        x32[:, :width].uniform_(-gate_range, gate_range, generator=gen)
        x32[:, width:].uniform_(-linear_range, linear_range, generator=gen)
        x = alloc(torch, (rows, 2 * width), torch.float16)
        x.copy_(x32)
        y = run_kernel(torch, x, None, act, "first")
        check(record, "gated_activation", f"{act}:|gate| {gate_range:g} x |linear| {linear_range:g}", "float16",
              (rows, width), y, ref_of(x, None, act, "first", None, None))


@pytest.mark.gpu
@pytest.mark.parametrize("form", FORMS)
def test_gated_empty_batch(torch, form):
    x, x2 = operands(torch, torch.Generator(device="cuda").manual_seed(1), form, 0, 64, torch.float16)
    y = run_kernel(torch, x, x2, "silu", "second")
    assert tuple(y.shape) == (0, 64)


@pytest.mark.gpu
@pytest.mark.parametrize("form", FORMS)
def test_gated_beyond_2_pow_32_elements(torch, record, form):
    """y of 2^32 + 3 x 16384 FP16 elements (8 GiB; the halves read 16 GiB): 64-bit offsets, the
    32-bit division shortcut left at 2^32, the row tracking across both. Every element written (y
    poisoned with NaN), rows around 2^31 and 2^32 elements and the last rows exact."""
    width, rows = 16384, 2**18 + 3
    need = rows * width * 2 * 3 + 2**33  # + torch.isnan's mask and slack
    if torch.cuda.mem_get_info()[0] < need:
        pytest.skip(f"needs {need / 2**30:.0f} GiB of free GPU memory")
    gen = torch.Generator(device="cuda").manual_seed(17)
    if form == "halves":
        x, x2 = torch.empty((rows, 2 * width), dtype=torch.float16, device="cuda").uniform_(-3, 3, generator=gen), None
    else:
        x, x2 = (torch.empty((rows, width), dtype=torch.float16, device="cuda").uniform_(-3, 3, generator=gen)
                 for _ in range(2))
    gb = None if x2 is not None else torch.randn(width, device="cuda", generator=gen)  # the halves: with the bias path
    y = torch.full((rows, width), float("nan"), dtype=torch.float16, device="cuda")
    gated_activation.kernel(x, x2, activation="silu", gate="second", gate_bias=gb, out=y)
    torch.cuda.synchronize()
    assert not torch.isnan(y).any(), "an element was not written"
    picks = sorted({0, 2**31 // width - 1, 2**31 // width, 2**32 // width - 1, 2**32 // width, rows - 1})
    idx = torch.tensor(picks, device="cuda")
    ref = ref_of(x[idx], None if x2 is None else x2[idx], "silu", "second", gb, None)
    check(record, "gated_activation", f"silu:{form}:> 2^32 elements", "float16", (rows, width), y[idx], ref)
    del x, x2, y
    torch.cuda.empty_cache()


@pytest.mark.gpu
def test_gated_bad_arguments_return_errors(torch):
    x = torch.randn(4, 16, device="cuda")
    y = torch.empty(4, 8, device="cuda")
    p = x.data_ptr()
    raw = lambda **kw: gated_activation.raw_kernel(**{**dict(  # noqa: E731
        dtype="float32", x=p, x2=0, gate_bias=0, linear_bias=0, y=y.data_ptr(), rows=4, width=8, activation="silu",
        gate="first"), **kw})
    raw()  # the baseline launches
    for bad in (dict(width=0), dict(width=-8), dict(rows=-1), dict(x=0), dict(y=0), dict(rows=2**62)):
        with pytest.raises(kernels.KernelError, match="CUDA error"):
            raw(**bad)
    lib = kernels.load()
    assert lib.trtp_gated_activation(0, p, None, None, None, y.data_ptr(), 4, 8, 7, 0, None) != 0  # hard_swish: not gated
    assert lib.trtp_gated_activation(0, p, None, None, None, y.data_ptr(), 4, 8, 5, 2, None) != 0  # no third operand
    assert lib.trtp_gated_activation(3, p, None, None, None, y.data_ptr(), 4, 8, 5, 0, None) != 0  # bad dtype
    raw(rows=0, x=0, y=0)  # nothing to do
    torch.cuda.synchronize()


# --- the plugin -----------------------------------------------------------------------------

TRT_TYPE = {"float32": FLOAT, "float16": HALF, "bfloat16": BF16}
# (x's shape, inputs, gate, activation): the one-input form halves x's last dim
PLUGIN_CASES = [((2, 5, 2 * 1280), 1, "second", "gelu"), ((37, 11008), 2, "first", "silu"),
                ((3, 2 * 7), 1, "first", "gelu_tanh"), ((4, 1, 1001), 2, "second", "relu"), ((0, 2 * 64), 1, "first", "silu")]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(TRT_TYPE))
@pytest.mark.parametrize("shape,nb_in,gate,act", PLUGIN_CASES, ids=str)
def test_gated_plugin_matches_bare_kernel(h, torch, record, dtype, shape, nb_in, gate, act):
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"plugin{shape}{dtype}".encode()))
    dt = tdtype(torch, dtype)
    inputs = [randn(torch, gen, shape, dt, scale=3.0) for _ in range(nb_in)]
    width = shape[-1] if nb_in == 2 else shape[-1] // 2
    out_shape = shape[:-1] + (width,)
    rng = np.random.default_rng(3)
    gb, lb = (rng.standard_normal(width).astype(np.float32) for _ in range(2))
    p = h.create_from("GatedActivation", activation=act, gate=gate, gate_bias=gb, linear_bias=lb)
    y = torch.full(out_shape, float("nan"), dtype=dt, device="cuda")
    types = [TRT_TYPE[dtype]] * (nb_in + 1)
    shapes = [shape] * nb_in + [out_shape]
    assert p.output_dims(0, shapes[:nb_in]) == out_shape
    assert p.configure(types, [(-1,) + s[1:] for s in shapes], nb_in) == 0  # a dynamic batch at build time
    assert p.initialize() == 0
    assert p.shape_change(types, shapes, nb_in) == 0
    stream = torch.cuda.current_stream().cuda_stream
    assert p.enqueue(types, shapes, [t.data_ptr() for t in inputs], [y.data_ptr()], stream) == 0
    torch.cuda.synchronize()
    cu = lambda a: torch.from_numpy(a).cuda()  # noqa: E731
    x2 = inputs[1] if nb_in == 2 else None
    bare = gated_activation.kernel(inputs[0], x2, activation=act, gate=gate, gate_bias=cu(gb), linear_bias=cu(lb))
    torch.cuda.synchronize()
    assert torch.equal(y, bare), "plugin enqueue and bare kernel differ"
    check(record, "plugin:GatedActivation", f"trt{h.major}-v{h.api}:{act}:{nb_in} input(s):{gate}", dtype, shape, y,
          ref_of(inputs[0], x2, act, gate, cu(gb), cu(lb)))
