"""Pattern base classes: a pattern finds one form of a fused op; the bases fold the
neighbours every form shares (the bias Add before an activation, the residual Add and
its bias before a norm) and build the plugin node's inputs and creator fields."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import onnx
import onnx_graphsurgeon as gs

from .. import schema
from ..reference import rows_broadcast
from .match import Ctx, Skip, const, guard, need, producer_op, split_const


#: the default epsilon attribute of ONNX's LayerNormalization, InstanceNormalization and GroupNormalization
ONNX_EPSILON = 1e-5

@dataclass
class Match:
    pattern: "Pattern"
    anchor: gs.Node
    nodes: list[gs.Node]  # replaced by the plugin node
    inputs: list[gs.Tensor]
    outputs: list[gs.Tensor]
    attrs: dict[str, Any]  # creator fields; weights as float32 arrays
    parts: list[str] = field(default_factory=list)  # what was folded: bias, skip, sum
    notes: list[str] = field(default_factory=list)  # constants accepted with a deviation
    #: (node, input index) to drop from a node kept outside the match when it is applied:
    #: a Gemm's bias C folded into the plugin
    drop_inputs: list[tuple[gs.Node, int]] = field(default_factory=list)

    @property
    def variant(self) -> str:
        return "+".join([self.pattern.variant_head or self.attrs.get("activation") or self.attrs["norm"]] + self.parts)


class Pattern:
    """One form of a fused op. match() raises Skip or returns a Match."""

    name: ClassVar[str]
    plugin: ClassVar[str]
    anchors: ClassVar[tuple[str, ...]]  # op types a match is searched from
    #: TensorRT fuses it alone into the preceding Conv/GEMM epilogue: replaced by default
    #: only when a bias Add comes with it.
    native: ClassVar[bool] = False
    #: replaced by default even where the match is one op (TensorRT's own is wrong or slow)
    single_op: ClassVar[bool] = False
    #: first word of the report's variant (default: the activation or norm field)
    variant_head: ClassVar[str | None] = None
    #: TensorRT fuses it into the epilogue of a MatMul/Gemm/Conv feeding an input: left by default
    #: where one does (graph.surgery.policy)
    epilogue: ClassVar[bool] = False

    def match(self, node: gs.Node, ctx: Ctx) -> Match:
        raise NotImplementedError

    def what(self, m: Match) -> str:
        """What a match computes, in the report's words."""
        return m.variant

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} -> {self.plugin}>"


class ActivationPattern(Pattern):
    """y = act(x [+ bias]) -> BiasActivation."""

    plugin = schema.BIAS_ACTIVATION
    epilogue = True
    activation: ClassVar[str]

    def activation_of(self, node: gs.Node) -> str:
        return self.activation

    def what(self, m: Match) -> str:
        return f"bias+{m.attrs['activation']}" if "bias" in m.attrs else m.attrs["activation"]

    def core(self, node: gs.Node, ctx: Ctx) -> tuple[gs.Tensor, gs.Tensor, list[gs.Node]]:
        """(x, y, nodes computing y = act(x))."""
        raise NotImplementedError

    def match(self, node: gs.Node, ctx: Ctx) -> Match:
        x, y, nodes = self.core(node, ctx)
        x = ctx.source(x)
        m = Match(self, node, nodes, [x], [y], {"activation": self.activation_of(node)})
        hidden = ctx.hidden(x)
        found = bias_add(x, nodes, hidden, ctx)
        if found:
            add, var, bias = found
            m.attrs["bias"] = ctx.vector(bias, hidden, "bias")
            m.inputs, m.nodes = [var], [add] + nodes
            m.parts.append("bias")
        src, view = x, producer_op(x, "Reshape")  # GPT-2 Conv1D: addmm, then a view keeping the last dim
        if view is not None and ctx.private(x, nodes) and ctx.private(view.inputs[0], [view]):
            src = view.inputs[0]
        gemm = producer_op(src, "Gemm")
        if ("bias" not in m.attrs and gemm is not None and hidden and len(gemm.inputs) == 3 and ctx.private(x, nodes)
                and ctx.hidden(src) == hidden):
            c = const(gemm.inputs[2])  # GPT-2's Conv1D: the bias inside the Gemm
            if c is not None and c.size == hidden and c.dtype.kind == "f":
                m.attrs["bias"] = ctx.vector(c * float(gemm.attrs.get("beta", 1.0)), hidden, "bias")
                m.drop_inputs.append((gemm, 2))
                m.parts.append("bias(Gemm)")
        return m


class NormPattern(Pattern):
    """y = norm(s) * gamma (+ beta), s = x (+ skip) (+ bias) -> SkipNorm."""

    plugin = schema.SKIP_NORM
    norm: ClassVar[str]

    def core(self, node: gs.Node, ctx: Ctx):
        """(s, y, nodes, gamma tensor or None, beta tensor or None, epsilon)."""
        raise NotImplementedError

    def match(self, node: gs.Node, ctx: Ctx) -> Match:
        s, y, nodes, gamma, beta, eps = self.core(node, ctx)
        s = ctx.source(s)
        if ctx.dtype(s) == onnx.TensorProto.DOUBLE:
            s, y, nodes = self._narrow(s, y, nodes, ctx)
        hidden = ctx.hidden(s)
        guard(hidden, f"hidden size (last dim of {s.name}) is not static")
        guard(eps > 0, f"epsilon {eps} is not > 0")
        attrs: dict[str, Any] = {
            "norm": self.norm,
            "epsilon": float(eps),
            "gamma": ctx.vector(gamma, hidden, "gamma") if gamma is not None else np.ones(hidden, np.float32),
        }
        if beta is not None:
            attrs["beta"] = ctx.vector(beta, hidden, "beta")
        m = Match(self, node, nodes, [s], [y], attrs)
        self._fold_skip(m, s, ctx)
        m.attrs["output_sum"] = int("sum" in m.parts)
        return m

    @staticmethod
    def _narrow(s, y, nodes, ctx: Ctx):
        """A norm computed in float64 between Casts (Cast(fp64) -> norm -> Cast(fp16), CLIP /
        Phi-3.5 vision): the plugin takes the narrow tensor and writes the narrow type
        (FP32 statistics). Leaves s, y as they are where the casts do not frame the norm;
        the type check then refuses the match."""
        cin = producer_op(s, "Cast")
        if cin is None or not ctx.private(s, nodes):
            return s, y, nodes
        inner = cin.inputs[0]
        try:
            cout = ctx.consumer(y, "Cast")
        except Skip:
            return s, y, nodes
        if cout.attrs.get("to") != ctx.dtype(inner):
            return s, y, nodes
        return inner, cout.outputs[0], [cin] + nodes + [cout]

    @staticmethod
    def _fold_skip(m: Match, s: gs.Tensor, ctx: Ctx) -> None:
        add = producer_op(s, "Add")
        if add is None or len(add.inputs) != 2:
            return
        for x, skip in (add.inputs, reversed(add.inputs)):
            if const(x) is None and ctx.same_shape(x, s):
                if const(skip) is None and ctx.same_shape(skip, s):
                    m.parts.append("skip")
                    break
                if _leading_broadcast(ctx, skip, s):
                    m.parts.append("skip(broadcast)")
                    break
        else:
            if not any(const(t) is not None for t in add.inputs):  # a broadcast the plugin cannot take, or unknown shapes
                known = all(ctx.dims(t) is not None for t in add.inputs)
                m.parts.append("no-skip(broadcast Add)" if known else "no-skip(shapes unknown)")
            return
        m.nodes = [add] + m.nodes
        m.inputs = [x, skip]
        if not ctx.private(s, m.nodes):
            m.outputs.append(s)
            m.parts.append("sum")
        for i, t in enumerate(m.inputs):  # a Linear bias Add in front of the residual Add
            inner = producer_op(t, "Add")
            var_bias = split_const(inner) if inner is not None and ctx.private(t, [add]) else None
            if var_bias and var_bias[1].size == ctx.hidden(s) and ctx.same_shape(var_bias[0], s):
                m.attrs["bias"] = ctx.vector(var_bias[1], ctx.hidden(s), "bias")
                m.inputs[i] = var_bias[0]
                m.nodes.insert(0, inner)
                m.parts.append("bias")
                break


def bias_add(t: gs.Tensor, nodes: list[gs.Node], size: int | None, ctx: Ctx) -> tuple[gs.Node, gs.Tensor, np.ndarray] | None:
    """The Add of a constant of `size` values in front of t, t read by nodes alone and the Add in no
    accepted match (a norm's beta): (the Add, its variable input of t's shape, the constant)."""
    add = producer_op(t, "Add")
    if add is None or not size or not ctx.private(t, nodes) or id(add) in ctx.claimed:
        return None
    var_bias = split_const(add)
    if var_bias and var_bias[1].size == size and ctx.same_shape(var_bias[0], t):
        return add, var_bias[0], var_bias[1]
    return None


def _leading_broadcast(ctx: Ctx, skip: gs.Tensor, s: gs.Tensor) -> bool:
    """skip broadcasts over leading dims of s only ([1,S,H] or [S,H] added to [B,S,H]: the
    plugin reads skip row r % skip_rows for row r of x). A constant counts when it has more
    than one row (one row is a bias)."""
    c = const(skip)
    ds, dx = (list(c.shape) if c is not None else ctx.dims(skip)), ctx.dims(s)
    if ds is None or dx is None or not rows_broadcast(dx, ds) or not all(isinstance(d, int) or d for d in ds):
        return False
    return c is None or c.size > ctx.hidden(s)


__all__ = ["ActivationPattern", "Match", "NormPattern", "Pattern", "Skip", "bias_add", "guard", "need"]
