"""LayerNorm: the opset-17 LayerNormalization op and the decomposed forms:
PyTorch's mean -> Sub -> Pow 2 -> mean -> Add eps -> Sqrt -> Div -> Mul gamma -> Add beta
(through no-op Casts, x - mean written once or twice), and TF/Keras's batch-norm form
s = gamma * Reciprocal(Sqrt(var + eps)), y = x * s + (beta - mean * s)."""

from __future__ import annotations

from ..match import Skip, affine, close, const, guard, inv_std, need, reduce_last_axis, rsqrt, scalar
from .base import NormPattern


class LayerNormOp(NormPattern):
    name, norm, anchors = "layer_norm_op", "layer", ("LayerNormalization",)

    def core(self, node, ctx):
        x = node.inputs[0]
        rank = ctx.rank(x)
        axis = int(node.attrs.get("axis", -1))
        guard(axis == -1 or (rank is not None and axis % rank == rank - 1), f"normalizes from axis {axis}, not the last axis only")
        guard(all(not t.outputs and t.name not in ctx.outputs for t in node.outputs[1:]), "Mean/InvStdDev outputs are used")
        beta = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2].name else None
        return x, node.outputs[0], [node], node.inputs[1], beta, float(node.attrs.get("epsilon", 1e-5))


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


__all__ = ["LayerNorm", "LayerNormOp"]
