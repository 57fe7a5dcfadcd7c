"""ReLU and ReLU6 (Clip(0, 6), Min(Max(x, 0), 6), Max(Min(x, 6), 0)).

TensorRT fuses either into a preceding Conv/GEMM, so alone they are opt-in (native)."""

from __future__ import annotations

import math

from ..match import Skip, close, guard, need, producer_op, scalar, split_scalar
from .base import ActivationPattern


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


__all__ = ["Relu", "Relu6", "Skip", "relu6"]
