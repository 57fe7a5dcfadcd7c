"""BiasActivation: y = act(x + bias); bias optional, broadcast over the last dim of x.

Its numpy reference, its ONNX patterns and its kernel binding. The subgraphs replaced, where
s = x, or x -> Add(bias[hidden]) -> s (folded in as `bias`; or a Gemm's C, GPT-2's Conv1D):

    gelu_erf     s -> Div(sqrt 2) | Mul(1/sqrt 2) -> Erf -> Add(1) -> Mul(s) -> Mul(0.5) -> y
    gelu_tanh    s -> Pow(3) | s*s*s -> Mul(0.044715) -> Add(s) -> Mul(sqrt(2/pi)) -> Tanh
                   -> Add(1) -> Mul(s) -> Mul(0.5) -> y            (any association, factored forms)
    gelu_op      s -> Gelu(approximate none | tanh) -> y
    hard_swish   s -> HardSwish -> y;  s -> HardSigmoid(1/6, 0.5) -> Mul(s) -> y;
                 s -> Add(3) -> Clip(0, 6) -> Mul(s) -> Mul(1/6) -> y
    quick_gelu   s -> Mul(1.702) -> Sigmoid -> Mul(s) -> y
    silu         s -> Sigmoid -> Mul(s) -> y
    relu6        s -> Clip(0, 6) | Min(Max(s, 0), 6) | Max(Min(s, 6), 0) -> y
    relu         s -> Relu -> y

TensorRT fuses a lone activation into the Conv/GEMM epilogue before it (native, epilogue): those
are replaced by default only where a bias Add comes with them.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .. import kernels
from ..fusion.match import close, guard, need, polynomial, producer_op, product, scalar, split_scalar
from ..fusion.pattern import ActivationPattern
from ..reference import activation, check_vec, f64
from . import BIAS_ACTIVATION, spec

#: fields and input shapes of one instance (tests, docs)
EXAMPLE = ({"activation": "gelu_tanh", "bias": np.linspace(-1, 1, 96, dtype=np.float32)}, [(3, 5, 96)])

# --- reference ------------------------------------------------------------------------------


def reference(x: np.ndarray, bias: np.ndarray | None = None, activation_name: str = "gelu") -> np.ndarray:
    """y = act(x + bias), bias broadcast over the last dim (float64 math, one cast to x's dtype)."""
    x = np.asarray(x)
    s = x.astype(np.float64)
    if bias is not None:
        check_vec("bias", np.asarray(bias), x.shape[-1])
        s = s + f64(bias).reshape(-1)
    return activation(activation_name, s).astype(x.dtype)


def node_reference(inputs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    return [reference(inputs[0], attrs.get("bias"), attrs["activation"])]


# --- patterns -------------------------------------------------------------------------------

def _gelu_tail(ctx, fn, x) -> tuple:
    """0.5 * x * (1 + fn(..)) around fn's output, in any order: (y, nodes)."""
    one = ctx.consumer(fn.outputs[0], "Add")
    other = ctx.other(one, fn.outputs[0])
    guard(ctx.near(scalar(other), 1.0, ctx.dtype(x), "the constant added to " + fn.op), f"{fn.op} is not followed by + 1")
    y, climbed = product(ctx, one.outputs[0], x, 0.5)
    return y, [one] + climbed


class GeluErf(ActivationPattern):
    """0.5 * x * (1 + Erf(x / sqrt 2)): x * 0.7071, x / Sqrt(2) as a node, the constant
    rounded as far as its type holds (FP16 1.41406), any Mul order."""

    name, activation, anchors = "gelu_erf", "gelu", ("Erf",)

    def core(self, erf, ctx):
        x, poly, (a0, a1, a2, a3) = polynomial(ctx, erf.inputs[0])
        need(poly, "Erf of x itself")
        guard(a0 == a2 == a3 == 0 and a1 != 0, "Erf argument is not a multiple of x")
        guard(ctx.near(1 / a1 if a1 else None, math.sqrt(2), ctx.dtype(x), "Erf divisor"), f"Erf argument is x / {1 / a1 if a1 else 0:.6g}, not x / sqrt(2)")
        y, tail = _gelu_tail(ctx, erf, x)
        return x, y, poly + [erf] + tail


class GeluTanh(ActivationPattern):
    """0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x**3))) in every algebraic spelling:
    x**3 as Pow or x*x*x, the factored k * x * (1 + c * x * x) (HF gelu_fast, Megatron
    openai_gelu, BLOOM), any association and operand order."""

    name, activation, anchors = "gelu_tanh", "gelu_tanh", ("Tanh",)

    def core(self, tanh, ctx):
        x, poly, (a0, a1, a2, a3) = polynomial(ctx, tanh.inputs[0])
        need(poly and a3 != 0, "Tanh argument is not a cubic in x")
        guard(a0 == 0 and a2 == 0, f"Tanh argument has terms in 1 or x**2 ({a0:.6g}, {a2:.6g})")
        dtype = ctx.dtype(x)
        guard(ctx.near(a1, math.sqrt(2 / math.pi), dtype, "Tanh scale"), f"Tanh argument scale {a1:.6g} != sqrt(2/pi)")
        guard(ctx.near(a3 / a1, 0.044715, dtype, "cubic coefficient"), f"cubic coefficient {a3 / a1:.6g} != 0.044715")
        y, tail = _gelu_tail(ctx, tanh, x)
        return x, y, poly + [tanh] + tail


class GeluOp(ActivationPattern):
    """The opset-20 Gelu op, approximate "none" or "tanh"."""

    name, activation, anchors = "gelu_op", "gelu", ("Gelu",)

    def activation_of(self, node):
        return {"none": "gelu", "tanh": "gelu_tanh"}[node.attrs.get("approximate", "none")]

    def core(self, node, ctx):
        guard(node.attrs.get("approximate", "none") in ("none", "tanh"), f"approximate={node.attrs.get('approximate')!r}")
        return node.inputs[0], node.outputs[0], [node]


def clip_bounds(node) -> tuple[float, float]:
    if "min" in node.attrs or "max" in node.attrs:  # opset < 11
        return float(node.attrs.get("min", -math.inf)), float(node.attrs.get("max", math.inf))
    lo = scalar(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1].name else -math.inf
    hi = scalar(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2].name else math.inf
    need(lo is not None and hi is not None)
    return lo, hi


def relu6(node, ctx):
    """(x, nodes) when node computes clip(x, 0, 6) as its output, else Skip."""
    if node.op == "Clip":
        lo, hi = clip_bounds(node)
        need(lo == 0)
        guard(hi == 6, f"Clip bounds ({lo:g}, {hi:g}) are not (0, 6)")
        return node.inputs[0], [node]
    need(node.op in ("Min", "Max") and len(node.inputs) == 2)
    outer_c, inner_op, inner_c = (6.0, "Max", 0.0) if node.op == "Min" else (0.0, "Min", 6.0)
    t, c = split_scalar(node)
    need(close(c + 1, outer_c + 1))
    inner = producer_op(t, inner_op)
    need(inner is not None and ctx.private(t, [node]))
    x, c = split_scalar(inner)
    need(close(c + 1, inner_c + 1))
    return x, [inner, node]


class Relu(ActivationPattern):
    name, activation, anchors, native = "relu", "relu", ("Relu",), True

    def core(self, node, ctx):
        return node.inputs[0], node.outputs[0], [node]


class Relu6(ActivationPattern):
    name, activation, anchors, native = "relu6", "relu6", ("Clip", "Min", "Max"), True

    def core(self, node, ctx):
        x, nodes = relu6(node, ctx)
        return x, node.outputs[0], nodes


class QuickGelu(ActivationPattern):
    name, activation, anchors = "quick_gelu", "quick_gelu", ("Sigmoid",)

    def core(self, sig, ctx):
        mul = producer_op(sig.inputs[0], "Mul")
        need(mul is not None and ctx.private(mul.outputs[0], [sig]))
        x, k = split_scalar(mul)
        y, climbed = product(ctx, sig.outputs[0], x, 1.0)
        guard(close(k, 1.702), f"Sigmoid argument scale {k:.6g} != 1.702")
        return x, y, [mul, sig] + climbed


class Silu(ActivationPattern):
    """x * Sigmoid(x); core() also takes the opset-24 Swish op (alpha 1), which only the gated
    pattern anchors on (a lone Swish is left as it is)."""

    name, activation, anchors = "silu", "silu", ("Sigmoid",)

    def core(self, sig, ctx):
        if sig.op == "Swish":
            alpha = float(sig.attrs.get("alpha", 1.0))
            guard(close(alpha, 1.0), f"Swish alpha {alpha:g} != 1")
            return sig.inputs[0], sig.outputs[0], [sig]
        x = sig.inputs[0]
        y, climbed = product(ctx, sig.outputs[0], x, 1.0)
        return x, y, [sig] + climbed


class HardSwish(ActivationPattern):
    name, activation, anchors = "hard_swish", "hard_swish", ("HardSwish", "HardSigmoid", "Clip", "Min", "Max")

    def core(self, node, ctx):
        if node.op == "HardSwish":
            return node.inputs[0], node.outputs[0], [node]
        if node.op == "HardSigmoid":
            x = node.inputs[0]
            y, climbed = product(ctx, node.outputs[0], x, 1.0)
            alpha, beta = node.attrs.get("alpha", 0.2), node.attrs.get("beta", 0.5)
            guard(close(alpha, 1 / 6) and close(beta, 0.5), f"HardSigmoid(alpha={alpha:g}, beta={beta:g}) is not (1/6, 0.5)")
            return x, y, [node] + climbed
        shifted, nodes = relu6(node, ctx)
        add = producer_op(shifted, "Add")
        need(add is not None and ctx.private(shifted, nodes[:1]))
        x, c = split_scalar(add)
        need(close(c, 3.0))
        y, climbed = product(ctx, node.outputs[0], x, 1 / 6)
        return x, y, [add] + nodes + climbed


PATTERNS = (GeluErf(), GeluTanh(), GeluOp(), HardSwish(), QuickGelu(), Silu(), Relu6(), Relu())


# --- kernel binding -------------------------------------------------------------------------

ACTIVATION_IDS = spec(BIAS_ACTIVATION).enum_ids("activation")


def raw_kernel(dtype, x: int, bias: int, y: int, rows: int, hidden: int, activation, stream: int = 0):
    code = kernels.load().trtp_bias_activation(
        kernels.dtype_id(dtype), x, bias or None, y, rows, hidden,
        kernels.lookup(ACTIVATION_IDS, activation, "activation"), stream or None,
    )
    kernels.check(code, "bias_activation")


def kernel(x, bias=None, activation: str = "gelu", out=None):
    """y = act(x + bias) over the last dim of x; `out` may be x (in place)."""
    import torch

    hidden = x.shape[-1] if x.dim() else 1
    y = torch.empty_like(x) if out is None else out
    rows = x.numel() // hidden if hidden else 0
    with kernels.on_device(x):  # rows == 0 goes through too: the kernel must accept it
        raw_kernel(kernels.dtype_name(x), kernels.data(x, "x"), kernels.weight(bias, "bias", hidden),
                   kernels.data(y, "out", x), rows, hidden, activation, kernels.stream_of(x))
    return y
