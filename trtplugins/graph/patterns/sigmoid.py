"""Sigmoid gates: SiLU x * Sigmoid(x), QuickGELU x * Sigmoid(1.702 x)."""

from __future__ import annotations

from ..match import close, guard, need, producer_op, product, split_scalar
from .base import ActivationPattern


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
