"""RMSNorm as T5 and LLaMA export it: x * rsqrt(mean(x**2) + eps) * gamma, with rsqrt as
Sqrt + Div, Sqrt + Reciprocal or 1 / Sqrt, through no-op Casts."""

from __future__ import annotations

from ..match import affine, close, inv_std, need, producer_op, reduce_last_axis, scalar
from .base import NormPattern


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
