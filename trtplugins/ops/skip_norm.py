"""SkipNorm: s = x (+ skip) (+ bias); y = norm(s) * gamma (+ beta), norm LayerNorm or RMSNorm over
the last dim; outputs y and, with output_sum, s.

Its numpy reference, its ONNX patterns and its kernel binding. The subgraphs replaced, where
s = x, or x -> Add(skip) -> s with skip like x or broadcast over its leading dims ([S, H] added to
[B, S, H]), a Linear bias Add in front of either operand folded in (`bias`); s is the second output
where others read it:

    layer_norm_op  s -> LayerNormalization(axis -1) -> y
    layer_norm     s -> ReduceMean -> Sub(s) -> d;  d -> Pow(2) | d*d -> ReduceMean -> Add(eps)
                     -> Sqrt -> Div(d) | Reciprocal -> Mul(d) -> [Mul(gamma)] -> [Add(beta)] -> y
                   (TF/Keras: s * g + (beta - mean * g), g = gamma / Sqrt(var + eps))
    rms_norm       s -> Pow(2) | s*s -> ReduceMean -> Add(eps) -> Sqrt -> Div | Reciprocal | 1/.
                     -> Mul(s) -> [Mul(gamma)] -> y                       (through no-op Casts)
"""

from __future__ import annotations

import ctypes
from typing import Any, Sequence

import numpy as np

from .. import kernels
from ..fusion.match import (Skip, affine, close, const, guard, inv_std, need, producer_op, reduce_last_axis, rsqrt,
                            scalar)
from ..fusion.pattern import ONNX_EPSILON, NormPattern
from ..reference import check_vec, f64, rows_broadcast as skip_fits
from . import NORMS, SKIP_NORM, spec

#: the default epsilon (the declaration's, from schema.json)
EPSILON = spec(SKIP_NORM).field("epsilon").default

#: fields and input shapes of one instance (tests, docs)
EXAMPLE = ({"norm": "layer", "gamma": np.linspace(0.5, 1.5, 768, dtype=np.float32),
            "beta": np.linspace(-1, 1, 768, dtype=np.float32), "output_sum": 1}, [(2, 9, 768), (9, 768)])

# --- reference ------------------------------------------------------------------------------


def reference(
    x: np.ndarray,
    skip: np.ndarray | None = None,
    *,
    gamma: np.ndarray,
    beta: np.ndarray | None = None,
    bias: np.ndarray | None = None,
    norm: str = "layer",
    epsilon: float = EPSILON,
    output_sum: bool = False,
):
    """s = x (+ skip) (+ bias); y = norm(s) * gamma (+ beta).

    skip has x's shape, or broadcasts over x's leading dims ([1,S,H] or [S,H] with x
    [B,S,H]): its rows (size / hidden of them) repeat, row r of x taking skip row
    r % skip_rows. s (and the sum output) has x's shape. Returns y, or (y, s) with output_sum.
    """
    x = np.asarray(x)
    hidden = x.shape[-1]
    for name, v in (("gamma", gamma), ("beta", beta), ("bias", bias)):
        check_vec(name, None if v is None else np.asarray(v), hidden)
    s = x.astype(np.float64)
    if skip is not None:
        skip = np.asarray(skip)
        if not skip_fits(x.shape, skip.shape):
            raise ValueError(f"skip shape {skip.shape} neither is input shape {x.shape} nor broadcasts over its leading dims")
        if skip.shape == x.shape:
            s = s + f64(skip)
        else:
            rows = skip.size // hidden
            s = (s.reshape(-1, rows, hidden) + f64(skip).reshape(rows, hidden)).reshape(x.shape)
    if bias is not None:
        s = s + f64(bias).reshape(-1)
    if norm == "layer":
        centered = s - s.mean(axis=-1, keepdims=True)
        y = centered / np.sqrt((centered**2).mean(axis=-1, keepdims=True) + epsilon)
    elif norm == "rms":
        y = s / np.sqrt((s**2).mean(axis=-1, keepdims=True) + epsilon)
    else:
        raise ValueError(f"unknown norm {norm!r}; expected one of {NORMS}")
    y = y * f64(gamma).reshape(-1)
    if beta is not None:
        y = y + f64(beta).reshape(-1)
    y = y.astype(x.dtype)
    return (y, s.astype(x.dtype)) if output_sum else y


def node_reference(inputs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    out = reference(inputs[0], inputs[1] if len(inputs) > 1 else None, gamma=attrs["gamma"], beta=attrs.get("beta"),
                    bias=attrs.get("bias"), norm=attrs["norm"], epsilon=float(attrs.get("epsilon", EPSILON)),
                    output_sum=bool(int(attrs.get("output_sum", 0))))
    return list(out) if isinstance(out, tuple) else [out]


# --- patterns -------------------------------------------------------------------------------

class LayerNormOp(NormPattern):
    name, norm, anchors = "layer_norm_op", "layer", ("LayerNormalization",)

    def core(self, node, ctx):
        x = node.inputs[0]
        rank = ctx.rank(x)
        axis = int(node.attrs.get("axis", -1))
        guard(axis == -1 or (rank is not None and axis % rank == rank - 1), f"normalizes from axis {axis}, not the last axis only")
        guard(all(not t.outputs and t.name not in ctx.outputs for t in node.outputs[1:]), "Mean/InvStdDev outputs are used")
        beta = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2].name else None
        return x, node.outputs[0], [node], node.inputs[1], beta, float(node.attrs.get("epsilon", ONNX_EPSILON))


def _square_of(ctx, node, centred) -> bool:
    """node is Pow(d, .) or Mul(d, d) for d one of the centred values."""
    if node.op == "Pow":
        return any(ctx.same(node.inputs[0], d) for d in centred)
    return node.op == "Mul" and any(ctx.same(node.inputs[0], d) and ctx.same(node.inputs[1], d) for d in centred)


def _batchnorm_form(ctx, var, x, mean):
    """TF/Keras: y = x * s + (beta - mean * s), s = gamma * 1 / Sqrt(var + eps).
    Returns (y, nodes, eps, gamma, beta)."""
    r, nodes, eps = rsqrt(ctx, var.outputs[0])
    need(r.op == "Reciprocal" or close(scalar(r.inputs[0]), 1.0), "no Reciprocal of the Sqrt")
    s = r.outputs[0]
    gamma = affine(ctx, s, "Mul")
    if gamma:
        s = gamma[1].outputs[0]
        nodes.append(gamma[1])
    uses = [n for n in ctx.uses(s) if n.op == "Mul"]
    xs = [n for n in uses if ctx.source(ctx.other(n, s)) is x]
    ms = [n for n in uses if ctx.source(ctx.other(n, s)) is ctx.source(mean)]
    need(len(xs) == len(ms) == 1 and len(ctx.uses(s)) == 2, "the scale is not applied to x and to the mean")
    xs, ms = xs[0].outputs[0], ms[0].outputs[0]
    sub = ctx.consumer(ms, "Sub")
    nodes += [xs.inputs[0], ms.inputs[0], sub]
    if ctx.source(sub.inputs[1]) is ctx.source(ms):  # beta - mean * s, then + x * s
        beta = sub.inputs[0]
        guard(const(beta) is not None, "beta is not a constant")
        add = ctx.consumer(sub.outputs[0], "Add")
        need(ctx.source(ctx.other(add, sub.outputs[0])) is ctx.source(xs), "x * s is not added")
        return add.outputs[0], nodes + [add], eps, gamma and gamma[0], beta
    need(ctx.source(sub.inputs[0]) is ctx.source(xs), "mean * s is not subtracted from x * s")
    return sub.outputs[0], nodes, eps, gamma and gamma[0], None


class LayerNorm(NormPattern):
    name, norm, anchors = "layer_norm", "layer", ("ReduceMean",)

    def core(self, mean, ctx):
        need(reduce_last_axis(mean, ctx), "not a mean over the last axis with keepdims")
        x = ctx.source(mean.inputs[0])
        m = mean.outputs[0]
        subs = [n for n in ctx.uses(m) if n.op == "Sub" and ctx.source(n.inputs[0]) is x and ctx.source(n.inputs[1]) is ctx.source(m)]
        need(subs, "the mean is not subtracted from its input")
        # x - mean, and its exact copies in a wider type (FP16 Phi-3.5 vision: the variance in float64)
        centred = [w for n in subs for w in ctx.widened(n.outputs[0])]
        sq = next((n for d in centred for n in ctx.uses(d) if _square_of(ctx, n, centred)), None)
        need(sq is not None, "x - mean is not squared")
        if sq.op == "Pow":
            guard(close(scalar(sq.inputs[1]), 2.0), f"variance uses Pow exponent {scalar(sq.inputs[1])}")
        var = ctx.consumer(sq.outputs[0], "ReduceMean")
        guard(reduce_last_axis(var, ctx), "variance is not a mean over the last axis with keepdims")
        casts = [t.inputs[0] for t in centred if all(t.inputs[0] is not n for n in subs)]
        nodes = [mean, *subs, *casts, sq, var]
        try:
            y, tail, eps = inv_std(ctx, var.outputs[0], centred)
        except Skip as first:
            try:
                y, tail, eps, gamma, beta = _batchnorm_form(ctx, var, x, m)
            except Skip:
                raise first from None
            return x, y, nodes + tail, gamma, beta, eps
        y, nodes = ctx.narrowed(y, x, nodes + tail)
        gamma = affine(ctx, y, "Mul")
        if gamma:
            y = gamma[1].outputs[0]
            nodes.append(gamma[1])
        beta = affine(ctx, y, "Add")
        if beta:
            y = beta[1].outputs[0]
            nodes.append(beta[1])
        return x, y, nodes, gamma and gamma[0], beta and beta[0], eps


class RmsNorm(NormPattern):
    name, norm, anchors = "rms_norm", "rms", ("Pow", "Mul")

    def core(self, sq, ctx):
        x = ctx.source(sq.inputs[0])
        centred = producer_op(x, "Sub")
        need(centred is None or producer_op(ctx.source(centred.inputs[1]), "ReduceMean") is None,
             "the square of x - mean: a LayerNorm's variance")
        if sq.op == "Pow":
            need(close(scalar(sq.inputs[1]), 2.0))
        else:
            need(ctx.source(sq.inputs[1]) is x)
        var = ctx.consumer(sq.outputs[0], "ReduceMean")
        need(reduce_last_axis(var, ctx))
        y, tail, eps = inv_std(ctx, var.outputs[0], [x])
        nodes = [sq, var] + tail
        gamma = affine(ctx, y, "Mul")
        if gamma:
            y = gamma[1].outputs[0]
            nodes.append(gamma[1])
        return x, y, nodes, gamma and gamma[0], None, eps


PATTERNS = (LayerNormOp(), LayerNorm(), RmsNorm())


# --- kernel binding -------------------------------------------------------------------------

NORM_IDS = spec(SKIP_NORM).enum_ids("norm")


def launcher(dtype, rows: int, hidden: int, epsilon: float, norm, skip_rows: int = 0, variant: int = -1):
    """raw_kernel with all but the pointers resolved once: launch(x, skip, bias, gamma, beta, y, sum_out,
    stream, gamma_io=0, beta_io=0) -> the C entry's code."""
    fn, dt, kind = kernels.load().trtp_skip_norm, kernels.dtype_id(dtype), kernels.lookup(NORM_IDS, norm, "norm")

    def launch(x, skip, bias, gamma, beta, y, sum_out, stream, gamma_io=0, beta_io=0):
        return fn(dt, x, skip or None, bias or None, gamma, beta or None, y, sum_out or None, rows, hidden, epsilon,
                  kind, skip_rows, variant, gamma_io or None, beta_io or None, stream or None)
    return launch


def raw_kernel(dtype, x: int, skip: int, bias: int, gamma: int, beta: int, y: int, sum_out: int,
                  rows: int, hidden: int, epsilon: float, norm, stream: int = 0, skip_rows: int = 0,
                  variant: int = -1, gamma_io: int = 0, beta_io: int = 0):
    launch = launcher(dtype, rows, hidden, epsilon, norm, skip_rows, variant)
    kernels.check(launch(x, skip, bias, gamma, beta, y, sum_out, stream, gamma_io, beta_io), "skip_norm")


def variant(dtype, norm: str, skip: bool, hidden: int, io_weights: bool = False, rows: int | None = None,
            aot: bool = True, output_sum: bool | None = None) -> int:
    """The kernel variant the plugin picks for (dtype, norm, a skip input or not, hidden) when configured;
    io_weights: its gamma/beta are exact in the 16-bit dtype (launches get gamma_io/beta_io); rows: a
    launch's row count (None: a large one; launches of <= small_elems() elements run another variant);
    aot False: among the CUDA kernels alone (not aot_variant(), where the library picks that);
    output_sum: the launch writes the sum too (None: with a skip input)."""
    return kernels.load().trtp_skip_norm_variant(kernels.dtype_id(dtype), kernels.lookup(NORM_IDS, norm, "norm"), skip,
                                                 skip if output_sum is None else output_sum, hidden, io_weights,
                                                 -1 if rows is None else rows, aot)


def aot_variant() -> int:
    """The variant that runs the Triton kernel built ahead of time (where the library has one)."""
    return kernels.enums()["skip_norm_variant"]["aot"]


def small_elems() -> int:
    """Launches of at most this many elements run the small-launch variant."""
    return kernels.load().trtp_skip_norm_small_elems()


def candidates(dtype, norm: str, skip: bool, hidden: int, output_sum: bool | None = None) -> list[int]:
    """Every kernel variant this build has that can run rows of `hidden` elements (benchmarks, tests);
    output_sum: the launch writes the sum too (None: with a skip input)."""
    buf = (ctypes.c_int * 256)()
    n = kernels.load().trtp_skip_norm_candidates(kernels.dtype_id(dtype), kernels.lookup(NORM_IDS, norm, "norm"), skip,
                                                 skip if output_sum is None else output_sum, hidden, buf, 256)
    return list(buf[:min(n, 256)])


def kernel(x, skip=None, *, gamma, beta=None, bias=None, norm: str = "layer", epsilon: float = EPSILON,
              output_sum: bool = False, out=None, sum_out=None, variant: int = -1, gamma_io=None, beta_io=None):
    """s = x (+ skip) (+ bias); y = norm(s) * gamma (+ beta). Returns y, or (y, s) with output_sum.

    skip is like x, or broadcasts over x's leading dims (its shape a suffix of x's, leading 1s
    allowed). variant: a kernel variant to force (-1: the one the plugin picks). gamma_io, beta_io:
    gamma and beta again in x's dtype, exactly equal to the float32 ones (the kernel then reads half
    the weight bytes)."""
    import torch

    hidden = x.shape[-1]
    y = torch.empty_like(x) if out is None else out
    s = (torch.empty_like(x) if sum_out is None else sum_out) if output_sum else None
    rows = x.numel() // hidden if hidden else 0
    skip_ptr, skip_rows = 0, 0
    if skip is not None:
        if skip.shape == x.shape:
            skip_ptr = kernels.data(skip, "skip", x)
        else:
            if skip.dtype != x.dtype or not skip_fits(x.shape, skip.shape):
                raise ValueError(f"skip {tuple(skip.shape)} must be like x {tuple(x.shape)} or broadcast over its "
                                 "leading dims")
            skip_ptr, skip_rows = kernels.data(skip, "skip"), max(1, skip.numel() // hidden)
    with kernels.on_device(x):
        raw_kernel(
            kernels.dtype_name(x), kernels.data(x, "x"), skip_ptr,
            kernels.weight(bias, "bias", hidden), kernels.weight(gamma, "gamma", hidden), kernels.weight(beta, "beta", hidden),
            kernels.data(y, "out", x), 0 if s is None else kernels.data(s, "sum_out", x), rows, hidden, float(epsilon),
            norm, kernels.stream_of(x), skip_rows, variant, io_weight(gamma_io, gamma, x), io_weight(beta_io, beta, x),
        )
    return (y, s) if output_sum else y


def io_weight(t, ref, x) -> int:
    """The pointer of a weight copy in x's dtype (its values the caller's promise: equal to ref's;
    not compared here, which would synchronize, and break CUDA-graph capture)."""
    if t is None:
        return 0
    if ref is None or t.dtype != x.dtype or t.shape != ref.shape:
        raise ValueError(f"gamma_io/beta_io must be like gamma/beta {None if ref is None else tuple(ref.shape)} "
                         f"in x's dtype {x.dtype}; got {tuple(t.shape)} {t.dtype}")
    return kernels.data(t, "gamma_io/beta_io")
