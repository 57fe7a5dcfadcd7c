"""LayerNorm: the opset-17 LayerNormalization op and the decomposed form
mean -> Sub -> Pow 2 -> mean -> Add eps -> Sqrt -> Div -> Mul gamma -> Add beta."""

from __future__ import annotations

from ..match import affine, close, guard, inv_std, need, others, reduce_last_axis, scalar
from .base import NormPattern


class LayerNormOp(NormPattern):
    name, norm, anchors = "layer_norm_op", "layer", ("LayerNormalization",)

    def core(self, node, ctx):
        x = node.inputs[0]
        rank = ctx.rank(x)
        axis = int(node.attrs.get("axis", -1))
        guard(rank is not None and axis % rank == rank - 1, f"normalizes from axis {axis}, not the last axis only")
        guard(all(not t.outputs and t.name not in ctx.outputs for t in node.outputs[1:]), "Mean/InvStdDev outputs are used")
        beta = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2].name else None
        return x, node.outputs[0], [node], node.inputs[1], beta, float(node.attrs.get("epsilon", 1e-5))


class LayerNorm(NormPattern):
    name, norm, anchors = "layer_norm", "layer", ("ReduceMean",)

    def core(self, mean, ctx):
        need(reduce_last_axis(mean, ctx))
        x = ctx.source(mean.inputs[0])
        sub = ctx.consumer(mean.outputs[0], "Sub")
        need(ctx.source(sub.inputs[0]) is x and sub.inputs[1] is mean.outputs[0])
        d = sub.outputs[0]
        need(len({id(n) for n in d.outputs}) == 2 and d.name not in ctx.outputs)
        sq = next((n for n in d.outputs if n.op in ("Pow", "Mul") and d in n.inputs), None)
        need(sq is not None)
        if sq.op == "Pow":
            guard(close(scalar(sq.inputs[1]), 2.0), f"variance uses Pow exponent {scalar(sq.inputs[1])}")
        else:
            need(sq.inputs[0] is d and sq.inputs[1] is d)
        var = ctx.consumer(sq.outputs[0], "ReduceMean")
        guard(reduce_last_axis(var, ctx), "variance is not a mean over the last axis with keepdims")
        y, tail, eps = inv_std(ctx, var.outputs[0], d)
        nodes = [mean, sub, sq, var] + tail
        gamma = affine(ctx, y, "Mul")
        if gamma:
            y = gamma[1].outputs[0]
            nodes.append(gamma[1])
        beta = affine(ctx, y, "Add")
        if beta:
            y = beta[1].outputs[0]
            nodes.append(beta[1])
        return x, y, nodes, gamma and gamma[0], beta and beta[0], eps


__all__ = ["LayerNorm", "LayerNormOp", "others"]
