"""Shared matching helpers over an onnx-graphsurgeon graph."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnx_graphsurgeon as gs

FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE}


class Skip(Exception):
    """A candidate the pattern declines. guard=True: the structure matched but a guard
    (constant, shape, consumer) failed, so the report lists it; False: not this pattern."""

    def __init__(self, reason: str, guard: bool = True):
        super().__init__(reason)
        self.reason, self.guard = reason, guard


def need(cond: Any, reason: str = "structure", guard: bool = False) -> None:
    if not cond:
        raise Skip(reason, guard)


def guard(cond: Any, reason: str) -> None:
    need(cond, reason, guard=True)


def producer(t: gs.Tensor) -> gs.Node | None:
    return t.inputs[0] if len(t.inputs) == 1 else None


def producer_op(t: gs.Tensor, *ops: str) -> gs.Node | None:
    p = producer(t)
    return p if p is not None and p.op in ops else None


def const(t: gs.Tensor) -> np.ndarray | None:
    """Value of an initializer, a Constant node output, or an Identity of one; else None."""
    if isinstance(t, gs.Constant):
        return np.asarray(t.values)
    p = producer(t)
    if p is None:
        return None
    if p.op == "Identity":
        return const(p.inputs[0])
    if p.op == "Constant":
        for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
            if key in p.attrs:
                v = p.attrs[key]
                return np.asarray(v.values if isinstance(v, gs.Constant) else v)
    return None


def scalar(t: gs.Tensor) -> float | None:
    v = const(t)
    return float(v.reshape(-1)[0]) if v is not None and v.size == 1 else None


def close(value: float | None, target: float, rtol: float = 1e-6) -> bool:
    return value is not None and abs(value - target) <= rtol * abs(target)


def others(node: gs.Node, t: gs.Tensor) -> gs.Tensor:
    """The other input of a binary node that has t as one input (t again for t*t)."""
    a, b = node.inputs[0], node.inputs[1]
    need(a is t or b is t)
    return b if a is t else a


def split_const(node: gs.Node) -> tuple[gs.Tensor, np.ndarray] | None:
    """(variable input, constant value) of a binary node with exactly one constant input."""
    if len(node.inputs) != 2:
        return None
    a, b = node.inputs
    ca, cb = const(a), const(b)
    if (ca is None) == (cb is None):
        return None
    return (b, ca) if ca is not None else (a, cb)


def split_scalar(node: gs.Node) -> tuple[gs.Tensor, float]:
    """(variable input, value) of a binary node whose other input is a one-element constant; Skip otherwise."""
    pair = split_const(node)
    need(pair is not None and pair[1].size == 1)
    return pair[0], float(pair[1].reshape(-1)[0])


@dataclass
class Ctx:
    """A graph being matched, with tensor shapes/dtypes from shape inference."""

    graph: gs.Graph
    shapes: dict[str, tuple[int, list]]  # name -> (elem_type, dims: int | str | None each)
    outputs: set[str] = field(default_factory=set)

    def __post_init__(self):
        self.outputs = {t.name for t in self.graph.outputs}

    def dims(self, t: gs.Tensor) -> list | None:
        info = self.shapes.get(t.name)
        return None if info is None or info[1] is None else info[1]

    def dtype(self, t: gs.Tensor) -> int | None:
        info = self.shapes.get(t.name)
        return None if info is None else info[0]

    def hidden(self, t: gs.Tensor) -> int | None:
        d = self.dims(t)
        return d[-1] if d and isinstance(d[-1], int) and d[-1] > 0 else None

    def rank(self, t: gs.Tensor) -> int | None:
        d = self.dims(t)
        return None if d is None else len(d)

    def same_shape(self, a: gs.Tensor, b: gs.Tensor) -> bool:
        da, db = self.dims(a), self.dims(b)
        return da is not None and da == db and all(isinstance(d, int) or d for d in da)

    def private(self, t: gs.Tensor, nodes: list[gs.Node]) -> bool:
        """t is used only by nodes (and is no graph output)."""
        ids = {id(n) for n in nodes}
        return t.name not in self.outputs and all(id(c) in ids for c in t.outputs)

    def source(self, t: gs.Tensor) -> gs.Tensor:
        """t seen through Identity and Casts that keep the dtype (LLaMA's .to(float32))."""
        p = producer(t)
        while p is not None and p.op in ("Identity", "Cast") and not isinstance(t, gs.Constant):
            src = p.inputs[0]
            if p.op == "Cast" and (self.dtype(src) is None or self.dtype(src) != p.attrs.get("to")):
                break
            t, p = src, producer(src)
        return t

    def consumer(self, t: gs.Tensor, *ops: str) -> gs.Node:
        """The single consumer of t, of one of ops, seen through no-op Casts/Identity."""
        need(t.name not in self.outputs and len(t.outputs) == 1)
        c = t.outputs[0]
        if c.op in ("Identity", "Cast") and self.source(c.outputs[0]) is self.source(t):
            return self.consumer(c.outputs[0], *ops)
        need(c.op in ops)
        return c

    @staticmethod
    def vector(t: gs.Tensor | np.ndarray, hidden: int, what: str) -> np.ndarray:
        """A constant [hidden] (or [1, .., hidden]) weight as a 1-D float32 array."""
        v = t if isinstance(t, np.ndarray) else const(t)
        guard(v is not None, f"{what} is not a constant")
        guard(v.size == hidden and v.shape[-1] == hidden, f"{what} has shape {list(v.shape)}, hidden size is {hidden}")
        guard(v.dtype.kind == "f", f"{what} has dtype {v.dtype}")
        return v.reshape(-1).astype(np.float32)


def reduce_last_axis(node: gs.Node, ctx: Ctx) -> bool:
    """ReduceMean over exactly the last axis with keepdims=1 (axes as attribute or input)."""
    if node.op != "ReduceMean" or int(node.attrs.get("keepdims", 1)) != 1:
        return False
    axes = node.attrs.get("axes")
    if axes is None and len(node.inputs) > 1:
        axes = const(node.inputs[1])
    rank = ctx.rank(node.inputs[0])
    if axes is None or rank is None:
        return False
    axes = [int(a) % rank for a in np.asarray(axes).reshape(-1)]
    return axes == [rank - 1]


def product(ctx: Ctx, start: gs.Tensor, x: gs.Tensor, scale: float) -> tuple[gs.Tensor, list[gs.Node]]:
    """Climb from start through Mul / Div-by-constant nodes until the value is
    scale * x * start, in any association: (x*s)*0.5, x*(0.5*s), (0.5*x)*s, x*s/2...
    Returns the output tensor and the nodes climbed."""
    x = ctx.source(x)
    cur, factor, has_x, nodes = start, 1.0, False, []
    while not (has_x and close(factor, scale)):
        try:
            n = ctx.consumer(cur, "Mul", "Div")
        except Skip:
            guard(not has_x, f"product scale is {factor:.6g}, expected {scale:.6g}")
            raise
        other = others(n, cur)
        c = scalar(other)
        if n.op == "Div":
            need(n.inputs[0] is cur and c is not None and c != 0)
            factor /= c
        elif c is not None:
            factor *= c
        elif not has_x and ctx.source(other) is x:
            has_x = True
        else:  # other = Mul(x, c) / Div(x, c) feeding only this node
            p = producer_op(other, "Mul", "Div")
            need(not has_x and p is not None and ctx.private(other, [n]))
            var, c = split_scalar(p)
            need(ctx.source(var) is x and (p.op == "Mul" or (p.inputs[0] is var and c != 0)))
            factor = factor * c if p.op == "Mul" else factor / c
            has_x = True
            nodes.append(p)
        nodes.append(n)
        cur = n.outputs[0]
        need(len(nodes) <= 4)
    return cur, nodes


def inv_std(ctx: Ctx, var: gs.Tensor, num: gs.Tensor) -> tuple[gs.Tensor, list[gs.Node], float]:
    """From a variance tensor: num / Sqrt(var + eps), or num * Reciprocal(Sqrt(..)),
    or num * (1 / Sqrt(..)) (torch.rsqrt). Returns (normalized tensor, nodes, eps)."""
    e = ctx.consumer(var, "Add")
    eps = scalar(others(e, var))
    need(eps is not None)
    sq = ctx.consumer(e.outputs[0], "Sqrt")
    r = ctx.consumer(sq.outputs[0], "Div", "Reciprocal")
    nodes = [e, sq, r]
    num = ctx.source(num)
    if r.op == "Div" and ctx.source(r.inputs[0]) is num:
        return r.outputs[0], nodes, eps
    if r.op == "Div":
        need(close(scalar(r.inputs[0]), 1.0))
    mul = ctx.consumer(r.outputs[0], "Mul")
    need(ctx.source(others(mul, r.outputs[0])) is num)
    return mul.outputs[0], nodes + [mul], eps


def affine(ctx: Ctx, t: gs.Tensor, op: str) -> tuple[gs.Tensor, gs.Node] | None:
    """(constant, node) when t's single consumer is `op` with a constant other input."""
    try:
        n = ctx.consumer(t, op)
    except Skip:
        return None
    other = others(n, n.inputs[0] if ctx.source(n.inputs[0]) is ctx.source(t) else n.inputs[1])
    return (other, n) if const(other) is not None else None
