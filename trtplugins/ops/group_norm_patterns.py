"""GroupNorm's ONNX patterns (trtplugins.ops.group_norm draws the subgraphs they replace)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_graphsurgeon as gs

from ..fusion.match import Skip, const, guard, need, producer_op, product, split_const
from ..fusion.pattern import ONNX_EPSILON, Match, Pattern
from . import GROUP_NORM
from .skip_norm import LayerNorm


class GroupNormPattern(Pattern):
    """y = act(GN(s) * gamma + beta), s = x (+ bias) (+ skip) -> GroupNorm."""

    plugin = GROUP_NORM
    #: replaced by default even as one op: TensorRT's GroupNormalization is wrong at num_groups = 1
    #: on 10.16 (NVIDIA/TensorRT#4756) and its plugin needs cuDNN
    single_op = True
    variant_head = "group"

    def core(self, node: gs.Node, ctx) -> tuple[gs.Tensor, gs.Tensor, list[gs.Node], int, Any, Any, float]:
        """(s, y, nodes, num_groups, gamma [C] or None, beta [C] or None, epsilon)."""
        raise NotImplementedError

    def match(self, node: gs.Node, ctx) -> Match:
        s, y, nodes, groups, gamma, beta, eps = self.core(node, ctx)
        s = ctx.source(s)
        dims = ctx.dims(s)
        guard(dims is not None and len(dims) >= 3, f"input {s.name!r} is not N, C, spatial... with known rank")
        c = dims[1]
        guard(isinstance(c, int) and c > 0, f"channel count (dim 1 of {s.name!r}) is not static")
        guard(groups >= 1 and c % groups == 0, f"{c} channels are not divisible by {groups} groups")
        guard(eps > 0, f"epsilon {eps} is not > 0")
        attrs: dict[str, Any] = {
            "num_groups": int(groups),
            "epsilon": float(eps),
            "gamma": np.ones(c, np.float32) if gamma is None else ctx.vector(gamma, c, "gamma"),
        }
        if beta is not None:
            attrs["beta"] = ctx.vector(beta, c, "beta")
        m = Match(self, node, nodes, [s], [y], attrs)
        self._fold_silu(m, ctx)
        self._fold_adds(m, s, c, ctx)
        m.attrs["output_sum"] = int("sum" in m.parts)
        return m

    @staticmethod
    def _fold_silu(m: Match, ctx) -> None:
        y = m.outputs[0]
        sig = next((n for n in ctx.uses(y) if n.op == "Sigmoid"), None)
        if sig is None or y.name in ctx.outputs or len(ctx.uses(y)) != 2:
            return
        try:
            out, climbed = product(ctx, sig.outputs[0], y, 1.0)
        except Skip:
            return
        if not ctx.private(y, [sig] + climbed):
            return
        m.nodes += [sig] + climbed
        m.outputs = [out]
        m.attrs["activation"] = "silu"
        m.parts.append("silu")

    @staticmethod
    def _per_channel(v: np.ndarray | None, c: int, rank: int) -> bool:
        """A constant that adds one value per channel to an N, C, spatial... tensor."""
        if v is None or v.size != c or v.dtype.kind != "f" or v.ndim > rank:
            return False
        shape = [1] * (rank - v.ndim) + list(v.shape)
        return shape[1] == c and all(d == 1 for i, d in enumerate(shape) if i != 1)

    def _fold_adds(self, m: Match, s: gs.Tensor, c: int, ctx) -> None:
        """Fold the Adds computing s: at most one per-channel constant (bias) and one variable
        Add (skip like s, or [N, C, 1, ...]), in either order."""
        rank, cur, skip, folded = ctx.rank(s), s, None, []
        for _ in range(2):
            add = producer_op(cur, "Add")
            if add is None or len(add.inputs) != 2 or (cur is not s and not ctx.private(cur, m.nodes + folded)):
                break
            pair = split_const(add)
            if pair is not None:
                if "bias" in m.attrs or not self._per_channel(pair[1], c, rank) or not ctx.same_shape(pair[0], cur):
                    break
                m.attrs["bias"] = pair[1].reshape(-1).astype(np.float32)
                m.parts.append("bias")
                nxt = pair[0]
            elif skip is None:
                found = self._skip_of(add, cur, c, ctx)
                if found is None:
                    m.parts.append("no-skip(broadcast Add)")
                    break
                nxt, skip, kind = found
                m.parts.append(kind)
            else:
                break
            folded.insert(0, add)
            cur = ctx.source(nxt)
        if not folded:
            return
        m.nodes = folded + m.nodes
        m.inputs = [cur] + ([skip] if skip is not None else [])
        if not ctx.private(s, m.nodes):  # others read the sum: second output
            m.outputs.append(s)
            m.parts.append("sum")

    @staticmethod
    def _skip_of(add: gs.Node, s: gs.Tensor, c: int, ctx) -> tuple[gs.Tensor, gs.Tensor, str] | None:
        """(x, skip, kind) of a variable Add: skip like s, or [N, C, 1, ...] (a time embedding)."""
        ds = ctx.dims(s)
        for x, skip in (add.inputs, list(reversed(add.inputs))):
            if not ctx.same_shape(x, s):
                continue
            if ctx.same_shape(skip, s):
                return x, skip, "skip"
            dk = ctx.dims(skip)
            if (dk is not None and len(dk) == len(ds) and dk[0] == ds[0] and (isinstance(dk[0], int) or dk[0])
                    and dk[1] == c and all(d == 1 for d in dk[2:])):
                return x, skip, "skip(per-channel)"
        return None


def _group_reshape(ctx, t: gs.Tensor) -> tuple[gs.Tensor, int, gs.Node]:
    """t = Reshape(x, [0 or N, G, -1 or C/G * spatial]) of an N, C, spatial... x: (x, G, node)."""
    r = producer_op(ctx.source(t), "Reshape")
    need(r is not None, f"{t.name!r} is not a Reshape")
    shape = const(r.inputs[1])
    need(shape is not None and shape.size == 3, "not a Reshape to [N, G, -1]")
    x = r.inputs[0]
    dx = ctx.dims(x)
    need(dx is not None and len(dx) >= 3 and isinstance(dx[1], int), "the reshaped tensor is not N, C, spatial...")
    g = int(shape.reshape(-1)[1])
    need(g >= 1 and dx[1] % g == 0, f"Reshape to {shape.tolist()}: not [N, G, -1] with G dividing C = {dx[1]}")
    first, last = int(shape.reshape(-1)[0]), int(shape.reshape(-1)[2])
    need(first in (0, dx[0]) or (first == -1 and last != -1), f"Reshape to {shape.tolist()} moves the batch")
    if last != -1:
        spatial = [d for d in dx[2:]]
        need(all(isinstance(d, int) for d in spatial) and last == dx[1] // g * int(np.prod(spatial)),
             f"Reshape to {shape.tolist()} is not [N, G, C/G * spatial]")
    return x, g, r


def _reshape_back(ctx, y: gs.Tensor, x: gs.Tensor, nodes: list[gs.Node]) -> tuple[gs.Tensor, list[gs.Node]]:
    """The Reshape of the normalized [N, G, L] back to x's shape (Shape(x) or x's static dims)."""
    back = ctx.consumer(y, "Reshape")
    target = back.inputs[1]
    shape_node = producer_op(target, "Shape")
    if shape_node is not None and ctx.source(shape_node.inputs[0]) is ctx.source(x) and not shape_node.attrs.get("start") \
            and shape_node.attrs.get("end") is None:
        need(ctx.private(target, [back]), "the Shape of x is used elsewhere")
        return back.outputs[0], nodes + [shape_node, back]
    v = const(target)
    dx = ctx.dims(x)
    need(v is not None and dx is not None and all(isinstance(d, int) for d in dx) and v.reshape(-1).tolist() == dx
         or ctx.same_shape(back.outputs[0], x), "the normalized groups are not reshaped back to x's shape")
    return back.outputs[0], nodes + [back]


def _affine_channels(ctx, y: gs.Tensor, nodes: list[gs.Node], c: int):
    """Mul gamma [C, 1, ...] then Add beta after y (each optional): (y, nodes, gamma, beta)."""
    gamma = beta = None
    rank = ctx.rank(y)
    for op in ("Mul", "Add"):
        try:
            n = ctx.consumer(y, op)
        except Skip:
            continue
        other = ctx.other(n, y)
        v = const(other)
        if v is None or rank is None or not GroupNormPattern._per_channel(v, c, rank):
            continue
        if op == "Mul":
            gamma = v.reshape(-1)
        else:
            beta = v.reshape(-1)
        nodes = nodes + [n]
        y = n.outputs[0]
        if op == "Add":
            break
    return y, nodes, gamma, beta


class GroupNormInstance(GroupNormPattern):
    name, anchors = "group_norm_instance", ("InstanceNormalization",)

    def core(self, inst, ctx):
        x, g, reshape = _group_reshape(ctx, inst.inputs[0])
        need(ctx.private(inst.inputs[0], [inst]), "the grouped view is used elsewhere")
        scale, bias = const(inst.inputs[1]), const(inst.inputs[2])
        guard(scale is not None and scale.size == g and np.all(scale == 1.0), "InstanceNormalization scale is not ones")
        guard(bias is not None and bias.size == g and np.all(bias == 0.0), "InstanceNormalization bias is not zeros")
        y, nodes = _reshape_back(ctx, inst.outputs[0], x, [reshape, inst])
        y, nodes, gamma, beta = _affine_channels(ctx, y, nodes, ctx.dims(x)[1])
        return x, y, nodes, g, gamma, beta, float(inst.attrs.get("epsilon", ONNX_EPSILON))


class GroupNormDecomposed(GroupNormPattern):
    name, anchors = "group_norm", ("ReduceMean",)

    def core(self, mean, ctx):
        grouped, y, nodes, gamma, beta, eps = LayerNorm().core(mean, ctx)
        need(gamma is None and beta is None, "an affine over the grouped view")
        x, g, reshape = _group_reshape(ctx, grouped)
        need(ctx.private(grouped, nodes), "the grouped view is used elsewhere")
        y, nodes = _reshape_back(ctx, y, x, [reshape] + nodes)
        y, nodes, gamma, beta = _affine_channels(ctx, y, nodes, ctx.dims(x)[1])
        return x, y, nodes, g, gamma, beta, eps


class GroupNormOp(GroupNormPattern):
    name, anchors = "group_norm_op", ("GroupNormalization",)

    def core(self, node, ctx):
        x = node.inputs[0]
        dx = ctx.dims(x)
        guard(dx is not None and len(dx) >= 3 and isinstance(dx[1], int), f"input {x.name!r} is not N, C, spatial... with static C")
        c, g = dx[1], int(node.attrs["num_groups"])
        guard(g >= 1 and c % g == 0, f"{c} channels are not divisible by num_groups {g}")
        scale, bias = const(node.inputs[1]), const(node.inputs[2])
        guard(scale is not None and bias is not None, "scale or bias is not a constant")
        guard(int(node.attrs.get("stash_type", 1)) == 1, "stash_type is not float32")
        if scale.size == g and g != c:  # an opset-18 op (per group), which onnx.version_converter keeps as it is
            scale, bias = np.repeat(scale.reshape(-1), c // g), np.repeat(bias.reshape(-1), c // g)
        return x, node.outputs[0], [node], g, scale, bias, float(node.attrs.get("epsilon", ONNX_EPSILON))


PATTERNS = (GroupNormOp(), GroupNormInstance(), GroupNormDecomposed())
