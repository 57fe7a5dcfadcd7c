"""Pattern base classes: a pattern finds one form of a fused op; the bases fold the
neighbours every form shares (the bias Add before an activation, the residual Add and
its bias before a norm) and build the plugin node's inputs and creator fields."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import onnx_graphsurgeon as gs

from ... import ops
from ..match import Ctx, Skip, const, guard, need, producer_op, split_const


@dataclass
class Match:
    pattern: "Pattern"
    anchor: gs.Node
    nodes: list[gs.Node]  # replaced by the plugin node
    inputs: list[gs.Tensor]
    outputs: list[gs.Tensor]
    attrs: dict[str, Any]  # creator fields; weights as float32 arrays
    parts: list[str] = field(default_factory=list)  # what was folded: bias, skip, sum

    @property
    def variant(self) -> str:
        return "+".join([self.attrs.get("activation") or self.attrs["norm"]] + self.parts)


class Pattern:
    """One form of a fused op. match() raises Skip or returns a Match."""

    name: ClassVar[str]
    plugin: ClassVar[str]
    anchors: ClassVar[tuple[str, ...]]  # op types a match is searched from
    #: TensorRT fuses it alone into the preceding Conv/GEMM epilogue: replaced by default
    #: only when a bias Add comes with it.
    native: ClassVar[bool] = False

    def match(self, node: gs.Node, ctx: Ctx) -> Match:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} -> {self.plugin}>"


class ActivationPattern(Pattern):
    """y = act(x [+ bias]) -> BiasActivation."""

    plugin = ops.BIAS_ACTIVATION
    activation: ClassVar[str]

    def activation_of(self, node: gs.Node) -> str:
        return self.activation

    def core(self, node: gs.Node, ctx: Ctx) -> tuple[gs.Tensor, gs.Tensor, list[gs.Node]]:
        """(x, y, nodes computing y = act(x))."""
        raise NotImplementedError

    def match(self, node: gs.Node, ctx: Ctx) -> Match:
        x, y, nodes = self.core(node, ctx)
        x = ctx.source(x)
        m = Match(self, node, nodes, [x], [y], {"activation": self.activation_of(node)})
        add = producer_op(x, "Add")
        if add is not None and ctx.private(x, nodes):
            var_bias = split_const(add)
            hidden = ctx.hidden(x)
            if var_bias and hidden and var_bias[1].size == hidden and ctx.same_shape(var_bias[0], x):
                m.attrs["bias"] = ctx.vector(var_bias[1], hidden, "bias")
                m.inputs, m.nodes = [var_bias[0]], [add] + nodes
                m.parts.append("bias")
        return m


class NormPattern(Pattern):
    """y = norm(s) * gamma (+ beta), s = x (+ skip) (+ bias) -> SkipNorm."""

    plugin = ops.SKIP_NORM
    norm: ClassVar[str]

    def core(self, node: gs.Node, ctx: Ctx):
        """(s, y, nodes, gamma tensor or None, beta tensor or None, epsilon)."""
        raise NotImplementedError

    def match(self, node: gs.Node, ctx: Ctx) -> Match:
        s, y, nodes, gamma, beta, eps = self.core(node, ctx)
        s = ctx.source(s)
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
    def _fold_skip(m: Match, s: gs.Tensor, ctx: Ctx) -> None:
        add = producer_op(s, "Add")
        if add is None or len(add.inputs) != 2 or any(const(t) is not None for t in add.inputs):
            return
        a, b = add.inputs
        if not (ctx.same_shape(a, s) and ctx.same_shape(b, s)):
            m.parts.append("no-skip(broadcast Add)")  # the plugin needs skip shape == x shape
            return
        m.nodes = [add] + m.nodes
        m.inputs = [a, b]
        m.parts.append("skip")
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


__all__ = ["ActivationPattern", "Match", "NormPattern", "Pattern", "Skip", "guard", "need"]
