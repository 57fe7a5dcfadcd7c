"""Gated linear units: act(gate) * linear -> GatedActivation (SwiGLU, GEGLU, ReGLU).

The activation is found by the BiasActivation patterns' own cores (SiLU as x * Sigmoid(x) or the
opset-24 Swish, GELU in its erf, tanh and opset-20 forms, Relu); its output times another tensor
makes the gate:
- a tensor of the same shape (LLaMA's silu(gate_proj(x)) * up_proj(x)): the plugin takes both;
- the other half of the tensor whose last dim the activated operand is half of, as x.chunk(2, -1)
  is exported (a Split, or two Slices the TorchScript exporter bounds with Shape arithmetic), either
  half activated (diffusers' GEGLU activates the second): the plugin takes that tensor.
A bias Add in front of each operand, or of the split tensor, is folded in. TensorRT fuses the
activation into the GEMM that feeds it: a match fed by a MatMul/Gemm/Conv is left by default."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import onnx
import onnx_graphsurgeon as gs

from ... import ops
from ..match import Ctx, Skip, const, guard, need, producer
from .base import ActivationPattern, Match, Pattern, bias_add
from .gelu import GeluErf, GeluOp, GeluTanh
from .relu import Relu
from .sigmoid import Silu

#: the integer arithmetic from Shape(x) to the bounds of x.chunk's Slices (TorchScript)
_SHAPE_OPS = ("Shape", "Gather", "Add", "Sub", "Mul", "Div", "Cast", "Unsqueeze", "Squeeze", "Concat", "Slice", "Identity")


class GatedPattern(Pattern):
    """act(gate) * linear, act matched by `inner`'s core."""

    plugin = ops.GATED_ACTIVATION
    epilogue = True
    inner: ClassVar[ActivationPattern]

    def what(self, m: Match) -> str:
        return f"{'bias+' if 'bias' in m.parts else ''}gated {m.attrs['activation']}"

    def match(self, node: gs.Node, ctx: Ctx) -> Match:
        try:
            x, y, nodes = self.inner.core(node, ctx)
        except Skip as e:  # a near-miss of the activation alone: its own pattern reports it
            raise Skip(e.reason, guard=False) from None
        mul = ctx.consumer(y, "Mul")
        other = ctx.other(mul, y)
        need(const(other) is None, "the activation is scaled by a constant, not gated")
        gate, linear = ctx.source(x), ctx.source(other)
        m = Match(self, node, nodes + [mul], [gate, linear], [mul.outputs[0]], {"activation": self.inner.activation_of(node)})
        if not self._halves(m, ctx):
            guard(ctx.same_shape(gate, linear), f"operands {gate.name!r} and {linear.name!r} differ in shape or are not known")
            self._fold_biases(m, ctx)
        return m

    @staticmethod
    def _halves(m: Match, ctx: Ctx) -> bool:
        """The operands are the halves of one tensor's last dim, read by the match alone: it takes
        that tensor (and the bias Add in front of it)."""
        gate, linear = m.inputs
        found = _split(gate, linear, ctx)
        if found is None:
            return False
        src, split, second = found
        nodes = split + m.nodes
        if not (ctx.private(gate, nodes) and ctx.private(linear, nodes)):
            return False  # a half used elsewhere: the halves are the plugin's two inputs
        width = ctx.hidden(src) // 2
        m.nodes, m.inputs = nodes, [src]
        m.attrs["gate"] = "second" if second else "first"
        m.parts.append("halves")
        reads = _shape_reads(src, nodes, ctx)
        found = bias_add(src, nodes + reads, 2 * width, ctx) if reads is not None else None
        if found:
            add, var, bias = found
            first, other = np.asarray(bias).reshape(2, width)
            gate_bias, linear_bias = (other, first) if second else (first, other)
            m.attrs["gate_bias"] = ctx.vector(gate_bias, width, "gate_bias")
            m.attrs["linear_bias"] = ctx.vector(linear_bias, width, "linear_bias")
            m.nodes, m.inputs = [add] + reads + nodes, [var]
            m.parts.append("bias")
        return True

    @staticmethod
    def _fold_biases(m: Match, ctx: Ctx) -> None:
        """A bias Add in front of each of two operand tensors (not one tensor used twice)."""
        width = ctx.hidden(m.inputs[0])
        if m.inputs[0] is m.inputs[1]:
            return
        for i, key in enumerate(("gate_bias", "linear_bias")):
            found = bias_add(m.inputs[i], m.nodes, width, ctx)
            if found:
                add, m.inputs[i], bias = found
                m.attrs[key] = ctx.vector(bias, width, key)
                m.nodes = [add] + m.nodes
        if "gate_bias" in m.attrs or "linear_bias" in m.attrs:
            m.parts.append("bias")


def _split(a: gs.Tensor, b: gs.Tensor, ctx: Ctx) -> tuple[gs.Tensor, list[gs.Node], bool] | None:
    """(x, the nodes splitting it, whether a is the second half) when a and b are the two halves of
    x's last dim, else None."""
    pa, pb = producer(a), producer(b)
    if a is b or pa is None or pb is None or pa.op not in ("Split", "Slice") or pb.op != pa.op:
        return None
    x = ctx.source(pa.inputs[0])
    width = ctx.hidden(x)
    if not width or width % 2 or not _last_axis(ctx, x, pa):
        return None
    if pa.op == "Split":
        sizes = const(pa.inputs[1]) if len(pa.inputs) > 1 and pa.inputs[1].name else pa.attrs.get("split")
        equal = sizes is None or [int(s) for s in np.asarray(sizes).reshape(-1)] == [width // 2] * 2
        return (x, [pa], pa.outputs[1] is a) if pa is pb and len(pa.outputs) == 2 and equal else None
    if ctx.source(pb.inputs[0]) is not x or not _last_axis(ctx, x, pb):
        return None
    if not all(ctx.dims(s.outputs[0]) and ctx.dims(s.outputs[0])[-1] == width // 2 for s in (pa, pb)):
        return None
    for first, second, a_second in ((pa, pb, False), (pb, pa, True)):
        # [0, w) and [w, ..) of a 2w last dim, each w long: the second starts where the first ends
        if _scalar_int(first.inputs[1]) == 0 and (_scalar_int(second.inputs[1]) == width // 2
                                                  or ctx.source(second.inputs[1]) is ctx.source(first.inputs[2])):
            return x, [pa, pb], a_second
    return None


def _last_axis(ctx: Ctx, x: gs.Tensor, node: gs.Node) -> bool:
    """A Split or a step-1 Slice of x along its last axis."""
    if node.op == "Split":
        axis = int(node.attrs.get("axis", 0))
    else:
        ins = node.inputs
        axes = const(ins[3]) if len(ins) > 3 and ins[3].name else None
        steps = _scalar_int(ins[4]) if len(ins) > 4 and ins[4].name else 1
        if axes is None or axes.size != 1 or steps != 1:
            return False
        axis = int(axes.reshape(-1)[0])
    rank = ctx.rank(x)
    return axis == -1 or (rank is not None and axis % rank == rank - 1)


def _scalar_int(t: gs.Tensor) -> int | None:
    v = const(t)
    return int(v.reshape(-1)[0]) if v is not None and v.size == 1 else None


def _shape_reads(t: gs.Tensor, nodes: list[gs.Node], ctx: Ctx) -> list[gs.Node] | None:
    """The Shape(t) arithmetic that ends in `nodes` alone (the TorchScript bounds of x.chunk's
    Slices): it goes with the match. None when t has another reader."""
    ids, found = {id(n) for n in nodes}, []
    todo = [c for c in t.outputs if id(c) not in ids]
    if any(c.op != "Shape" for c in todo):
        return None
    while todo:
        n = todo.pop()
        if id(n) in ids:
            continue
        if n.op not in _SHAPE_OPS or len(found) >= 16:
            return None
        for o in n.outputs:
            if o.name in ctx.outputs or ctx.dtype(o) != onnx.TensorProto.INT64:
                return None
            todo += o.outputs
        ids.add(id(n))
        found.append(n)
    return found


class Swiglu(GatedPattern):
    name, inner, anchors = "swiglu", Silu(), ("Sigmoid", "Swish")


class GegluErf(GatedPattern):
    name, inner, anchors = "geglu_erf", GeluErf(), GeluErf.anchors


class GegluTanh(GatedPattern):
    name, inner, anchors = "geglu_tanh", GeluTanh(), GeluTanh.anchors


class GegluOp(GatedPattern):
    name, inner, anchors = "geglu_op", GeluOp(), GeluOp.anchors


class Reglu(GatedPattern):
    name, inner, anchors = "reglu", Relu(), Relu.anchors


__all__ = ["GatedPattern", "GegluErf", "GegluOp", "GegluTanh", "Reglu", "Swiglu"]
