"""HardSwish: the opset-14 op, x * HardSigmoid(x), x * Clip(x + 3, 0, 6) / 6."""

from __future__ import annotations

from ..match import close, guard, need, producer_op, product, split_scalar
from .base import ActivationPattern
from .relu import relu6


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
