"""GELU: erf form, tanh form, and the opset-20 Gelu op."""

from __future__ import annotations

import math

from ..match import close, guard, need, others, producer_op, product, scalar, split_const, split_scalar
from .base import ActivationPattern


class GeluErf(ActivationPattern):
    """0.5 * x * (1 + Erf(x / sqrt 2)), x * 0.7071 instead of the Div, any Mul order."""

    name, activation, anchors = "gelu_erf", "gelu", ("Erf",)

    def core(self, erf, ctx):
        scale = producer_op(erf.inputs[0], "Div", "Mul")
        need(scale is not None and ctx.private(scale.outputs[0], [erf]))
        x, k = split_scalar(scale)
        need(scale.op == "Mul" or scale.inputs[0] is x)
        guard(close(k, math.sqrt(2) if scale.op == "Div" else math.sqrt(0.5)), f"Erf argument is x {'/' if scale.op == 'Div' else '*'} {k:.6g}, not x / sqrt(2)")
        one = ctx.consumer(erf.outputs[0], "Add")
        guard(close(scalar(others(one, erf.outputs[0])), 1.0), "Erf is not followed by + 1")
        y, climbed = product(ctx, one.outputs[0], x, 0.5)
        return x, y, [scale, erf, one] + climbed


def _is_cube(ctx, t, x) -> list | None:
    """Nodes computing x**3 as Pow(x, 3) or x*x*x, else None."""
    p = producer_op(t, "Pow", "Mul")
    if p is None or not ctx.private(t, t.outputs):
        return None
    a, b = (ctx.source(i) for i in p.inputs)
    if p.op == "Pow":
        return [p] if a is x and close(scalar(p.inputs[1]), 3.0) else None
    for sq, lone in ((a, b), (b, a)):
        q = producer_op(sq, "Mul")
        if lone is x and q is not None and all(ctx.source(i) is x for i in q.inputs) and len(sq.outputs) == 1:
            return [q, p]
    return None


class GeluTanh(ActivationPattern):
    """0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))."""

    name, activation, anchors = "gelu_tanh", "gelu_tanh", ("Tanh",)

    def core(self, tanh, ctx):
        outer = producer_op(tanh.inputs[0], "Mul")
        need(outer is not None and ctx.private(outer.outputs[0], [tanh]))
        inner, k = split_scalar(outer)
        add = producer_op(inner, "Add")
        need(add is not None and ctx.private(inner, [outer]))
        for x, term in (add.inputs, reversed(add.inputs)):
            x = ctx.source(x)
            cmul = producer_op(term, "Mul")
            pair = split_const(cmul) if cmul is not None else None
            cube = _is_cube(ctx, pair[0], x) if pair is not None and pair[1].size == 1 else None
            if cube and ctx.private(term, [add]):
                c = float(pair[1].reshape(-1)[0])
                break
        else:
            need(False)
        guard(close(k, math.sqrt(2 / math.pi)), f"Tanh argument scale {k:.6g} != sqrt(2/pi)")
        guard(close(c, 0.044715), f"cubic coefficient {c:.6g} != 0.044715")
        one = ctx.consumer(tanh.outputs[0], "Add")
        guard(close(scalar(others(one, tanh.outputs[0])), 1.0), "Tanh is not followed by + 1")
        y, climbed = product(ctx, one.outputs[0], x, 0.5)
        return x, y, cube + [cmul, add, outer, tanh, one] + climbed


class GeluOp(ActivationPattern):
    """The opset-20 Gelu op, approximate "none" or "tanh"."""

    name, activation, anchors = "gelu_op", "gelu", ("Gelu",)

    def activation_of(self, node):
        return {"none": "gelu", "tanh": "gelu_tanh"}[node.attrs.get("approximate", "none")]

    def core(self, node, ctx):
        guard(node.attrs.get("approximate", "none") in ("none", "tanh"), f"approximate={node.attrs.get('approximate')!r}")
        return node.inputs[0], node.outputs[0], [node]
