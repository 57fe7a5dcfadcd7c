"""GELU: erf form, tanh form, and the opset-20 Gelu op."""

from __future__ import annotations

import math

from ..match import guard, need, polynomial, product, scalar
from .base import ActivationPattern


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
