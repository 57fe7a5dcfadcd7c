"""Shared matching helpers over an onnx-graphsurgeon graph."""

from __future__ import annotations

import linecache
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnx_graphsurgeon as gs
from onnx_graphsurgeon.ir.tensor import LazyValues

FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16, onnx.TensorProto.DOUBLE}


class Skip(Exception):
    """A candidate the pattern declines. guard=True: the structure matched but a guard
    (constant, shape, consumer) failed, so the report lists it; False: not this pattern."""

    def __init__(self, reason: str, guard: bool = True):
        super().__init__(reason)
        self.reason, self.guard = reason, guard


def need(cond: Any, reason: str = "", guard: bool = False) -> None:
    """Skip unless cond. A structural miss is reported with where it happened: the
    pattern's line (with its code), and the helper's line when a helper failed."""
    if not cond:
        raise Skip(reason if guard else _where(reason), guard)


def _where(reason: str) -> str:
    frame = sys._getframe(2)
    helper = None
    while frame is not None and frame.f_code.co_filename == __file__:
        helper = helper or frame.f_lineno
        frame = frame.f_back
    if frame is None:
        return reason or "no match"
    at = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
    code = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    if helper is not None:
        at += f" `{code}` via {os.path.basename(__file__)}:{helper}"
    elif not reason:
        at += f" `{code}`"
    return f"{reason} ({at})" if reason else f"no match at {at}"


def guard(cond: Any, reason: str) -> None:
    need(cond, reason, guard=True)


def producer(t: gs.Tensor) -> gs.Node | None:
    return t.inputs[0] if len(t.inputs) == 1 else None


def producer_op(t: gs.Tensor, *ops: str) -> gs.Node | None:
    p = producer(t)
    return p if p is not None and p.op in ops else None


#: elementwise ops folded when all their inputs are constant (Div(x, Sqrt(2)) as tf2onnx writes it)
_FOLD = {
    "Sqrt": np.sqrt, "Reciprocal": np.reciprocal, "Neg": np.negative, "Add": np.add, "Sub": np.subtract,
    "Mul": np.multiply, "Div": np.divide, "Pow": np.power,
}


def values(c: gs.Constant) -> np.ndarray:
    """A constant's values. A tensor still in external data is read without being kept: reading
    c.values would make it an in-graph array that onnx-graphsurgeon exports with raw data yet
    still marked EXTERNAL (which onnx.checker rejects), and would grow a large model's protobuf."""
    v = c._values
    return np.asarray(v.load() if isinstance(v, LazyValues) else v)


def const(t: gs.Tensor) -> np.ndarray | None:
    """Value of an initializer, a Constant node output, an Identity or Cast of one, or a
    small elementwise expression of constants; else None."""
    if isinstance(t, gs.Constant):
        return values(t)
    p = producer(t)
    if p is None:
        return None
    if p.op == "Identity":
        return const(p.inputs[0])
    if p.op == "Constant":
        for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
            if key in p.attrs:
                v = p.attrs[key]
                return values(v) if isinstance(v, gs.Constant) else np.asarray(v)
        return None
    if p.op == "Cast" and p.attrs.get("to") in FLOAT_TYPES:
        v = const(p.inputs[0])
        return None if v is None else v.astype(onnx.helper.tensor_dtype_to_np_dtype(p.attrs["to"]))
    if p.op in _FOLD and p.inputs and all(i.name for i in p.inputs):
        vals = [const(i) for i in p.inputs]
        if all(v is not None and v.dtype.kind == "f" and v.size <= 1 for v in vals):
            with np.errstate(all="ignore"):
                return np.asarray(_FOLD[p.op](*vals))
    return None


def scalar(t: gs.Tensor) -> float | None:
    v = const(t)
    return float(v.reshape(-1)[0]) if v is not None and v.size == 1 else None


def close(value: float | None, target: float, rtol: float = 1e-6) -> bool:
    return value is not None and abs(value - target) <= rtol * abs(target)


#: a constant written with 6 significant digits (Megatron's x / 1.41421) is the constant
ROUNDED = 1e-5


def tolerance(dtype: int | None) -> float:
    """Relative deviation a constant of the given ONNX type may carry: what its type can
    hold (FP16 sqrt 2 is 1.41406), and never less than 6 significant digits."""
    eps = {onnx.TensorProto.FLOAT16: 2.0**-11, onnx.TensorProto.BFLOAT16: 2.0**-8}.get(dtype, 0.0)  # half an ulp
    return max(eps, ROUNDED)


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


def _same_attrs(a: dict, b: dict) -> bool:
    def value(v):
        return values(v) if isinstance(v, gs.Constant) else np.asarray(v)

    try:
        return a.keys() == b.keys() and all(np.array_equal(value(a[k]), value(b[k])) for k in a)
    except Exception:  # attributes numpy cannot compare (subgraphs): not the same
        return False


@dataclass
class Ctx:
    """A graph being matched, with tensor shapes/dtypes from shape inference."""

    graph: gs.Graph
    shapes: dict[str, tuple[int, list]]  # name -> (elem_type, dims: int | str | None each)
    outputs: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)  # deviations accepted by the match in progress
    claimed: set[int] = field(default_factory=set)  # ids of nodes already in an accepted match

    def __post_init__(self):
        self.outputs = {t.name for t in self.graph.outputs}

    def near(self, value: float | None, target: float, dtype: int | None, what: str) -> bool:
        """value equals target up to what a constant of dtype holds; a deviation over
        1e-6 is accepted, noted for the report."""
        if value is None or not math.isfinite(value):
            return False
        dev = abs(value - target) / abs(target)
        if dev > 1e-6 and dev <= tolerance(dtype):
            self.notes.append(f"{what} is {value:.8g}, {target:.8g} within {dev:.2g} (relative)")
        return dev <= tolerance(dtype)

    def dims(self, t: gs.Tensor) -> list | None:
        info = self.shapes.get(t.name)
        return None if info is None or info[1] is None else info[1]

    def dtype(self, t: gs.Tensor) -> int | None:
        info = self.shapes.get(t.name)
        return None if info is None else info[0]

    def hidden(self, t: gs.Tensor, depth: int = 4) -> int | None:
        """t's last dim; where shape inference gave none, what broadcasting proves: a MatMul
        by a constant [K, N] ends in N, an elementwise op in an operand's last dim > 1."""
        d = self.dims(t)
        if d:
            return d[-1] if isinstance(d[-1], int) and d[-1] > 0 else None
        p = producer(t)
        if d is not None or p is None or depth == 0:
            return None
        if p.op in ("MatMul", "Gemm") and not p.attrs.get("transB"):
            w = const(p.inputs[1])
            return w.shape[-1] if w is not None and w.ndim >= 2 else None
        if p.op == "Gather" and int(p.attrs.get("axis", 0)) == 0:  # an embedding table [V, H]
            table = const(p.inputs[0])
            return table.shape[-1] if table is not None and table.ndim >= 2 else None
        if p.op == "Reshape":  # GPT-2 Conv1D: x.view(*x.size()[:-1], nf), the shape a Concat ending in nf
            cat = producer_op(p.inputs[1], "Concat")
            last = const(cat.inputs[-1]) if cat is not None else const(p.inputs[1])
            return int(last.reshape(-1)[-1]) if last is not None and last.size and last.reshape(-1)[-1] > 0 else None
        if p.op in ("Add", "Sub", "Mul", "Div", "Cast", "Identity"):
            known = {self.hidden(i, depth - 1) for i in p.inputs if i.name and const(i) is None} - {None, 1}
            return known.pop() if len(known) == 1 else None
        return None

    def rank(self, t: gs.Tensor) -> int | None:
        d = self.dims(t)
        return None if d is None else len(d)

    def same_shape(self, a: gs.Tensor, b: gs.Tensor) -> bool:
        da, db = self.dims(a), self.dims(b)
        return da is not None and da == db and all(isinstance(d, int) or d for d in da)

    def private(self, t: gs.Tensor, nodes: list[gs.Node]) -> bool:
        """t is used only by nodes (directly or through no-op Casts/Identity), and is no graph output."""
        ids = {id(n) for n in nodes}
        return t.name not in self.outputs and all(
            id(c) in ids or (self.glue(c) and self.private(c.outputs[0], nodes)) for c in t.outputs)

    def glue(self, n: gs.Node) -> bool:
        """n is an Identity or a Cast to the type it reads: no work."""
        return (n.op in ("Identity", "Cast") and len(n.outputs) == 1 and bool(n.inputs)
                and self.source(n.outputs[0]) is self.source(n.inputs[0]))

    def source(self, t: gs.Tensor) -> gs.Tensor:
        """t seen through Identity and Casts that keep the dtype (LLaMA's .to(float32))."""
        p = producer(t)
        while p is not None and p.op in ("Identity", "Cast") and not isinstance(t, gs.Constant):
            src = p.inputs[0]
            if p.op == "Cast" and (self.dtype(src) is None or self.dtype(src) != p.attrs.get("to")):
                break
            t, p = src, producer(src)
        return t

    def other(self, node: gs.Node, t: gs.Tensor) -> gs.Tensor:
        """The other input of a binary node reading t (seen through no-op Casts)."""
        need(len(node.inputs) == 2, f"{node.op} has {len(node.inputs)} inputs")
        a, b = node.inputs
        if self.source(a) is self.source(t):
            return b
        need(self.source(b) is self.source(t), f"{node.op} does not read {t.name!r}")
        return a

    def widened(self, t: gs.Tensor) -> list[gs.Tensor]:
        """t and its exact copies in wider float types (Cast fp16 -> fp32/fp64, fp32 -> fp64)."""
        width = {onnx.TensorProto.FLOAT16: 1, onnx.TensorProto.BFLOAT16: 1, onnx.TensorProto.FLOAT: 2, onnx.TensorProto.DOUBLE: 3}
        have = width.get(self.dtype(t), 9)
        return [t] + [c.outputs[0] for c in self.uses(t) if c.op == "Cast" and width.get(c.attrs.get("to"), 0) > have]

    def narrowed(self, y: gs.Tensor, like: gs.Tensor, nodes: list[gs.Node]) -> tuple[gs.Tensor, list[gs.Node]]:
        """y cast back to like's type where it was computed wider (the Cast joins nodes)."""
        if self.dtype(y) is None or self.dtype(y) == self.dtype(like):
            return y, nodes
        c = self.consumer(y, "Cast")
        need(c.attrs.get("to") == self.dtype(like), "the wide result is not cast back to the input type")
        return c.outputs[0], nodes + [c]

    def uses(self, t: gs.Tensor) -> list[gs.Node]:
        """Every node reading t, seen through no-op Casts/Identity (not the glue itself)."""
        out = []
        for c in t.outputs:
            if self.glue(c):
                out += self.uses(c.outputs[0])
            else:
                out.append(c)
        return out

    def same(self, a: gs.Tensor, b: gs.Tensor, depth: int = 3) -> bool:
        """a and b hold one value: one source, or one op with the same attributes on the same
        inputs (x - mean written twice, Megatron)."""
        a, b = self.source(a), self.source(b)
        if a is b:
            return True
        pa, pb = producer(a), producer(b)
        return (depth > 0 and pa is not None and pb is not None and pa.op == pb.op and pa.op != "Constant"
                and _same_attrs(pa.attrs, pb.attrs) and len(pa.inputs) == len(pb.inputs) and len(pa.outputs) == 1
                and all(self.same(x, y, depth - 1) for x, y in zip(pa.inputs, pb.inputs)))

    def consumer(self, t: gs.Tensor, *ops: str) -> gs.Node:
        """The single consumer of t, of one of ops, seen through no-op Casts/Identity."""
        need(t.name not in self.outputs and len(t.outputs) == 1, f"{t.name!r} has {len(t.outputs)} consumers or is a graph output")
        c = t.outputs[0]
        if self.glue(c):
            return self.consumer(c.outputs[0], *ops)
        need(c.op in ops, f"{t.name!r} goes to {c.op}, not {'/'.join(ops)}")
        return c

    @staticmethod
    def vector(t: gs.Tensor | np.ndarray, hidden: int, what: str) -> np.ndarray:
        """A constant [hidden] (or [1, .., hidden]) weight as a 1-D float32 array."""
        v = t if isinstance(t, np.ndarray) else const(t)
        guard(v is not None, f"{what} is not a constant")
        guard(v.size == hidden and (v.ndim == 0 or v.shape[-1] == hidden), f"{what} has shape {list(v.shape)}, hidden size is {hidden}")
        guard(v.dtype.kind == "f", f"{what} has dtype {v.dtype}")
        return v.reshape(-1).astype(np.float32)


def reduce_last_axis(node: gs.Node, ctx: Ctx) -> bool:
    """ReduceMean over exactly the last axis with keepdims=1 (axes as attribute or input)."""
    if node.op != "ReduceMean" or int(node.attrs.get("keepdims", 1)) != 1:
        return False
    axes = node.attrs.get("axes")
    if axes is None and len(node.inputs) > 1:
        axes = const(node.inputs[1])
    if axes is None:
        return False
    axes = [int(a) for a in np.asarray(axes).reshape(-1)]
    if axes == [-1]:  # the last axis, whatever the rank (shape inference may give none)
        return True
    rank = ctx.rank(node.inputs[0])
    return rank is not None and [a % rank for a in axes] == [rank - 1]


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
        other = ctx.other(n, cur)
        c = scalar(other)
        if n.op == "Div":
            need(other is n.inputs[1] and c is not None and c != 0)
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


def rsqrt(ctx: Ctx, var: gs.Tensor) -> tuple[gs.Node, list[gs.Node], float]:
    """From a variance tensor: the node computing Sqrt(var + eps) (Div) or 1 / Sqrt(var + eps)
    (Reciprocal, or Div(1, ..)), the nodes so far, eps."""
    e = ctx.consumer(var, "Add")
    eps = scalar(ctx.other(e, var))
    need(eps is not None, "variance + a non-constant")
    sq = ctx.consumer(e.outputs[0], "Sqrt")
    r = ctx.consumer(sq.outputs[0], "Div", "Reciprocal")
    return r, [e, sq, r], eps


def inv_std(ctx: Ctx, var: gs.Tensor, nums: list[gs.Tensor]) -> tuple[gs.Tensor, list[gs.Node], float]:
    """From a variance tensor: num / Sqrt(var + eps), or num * Reciprocal(Sqrt(..)),
    or num * (1 / Sqrt(..)) (torch.rsqrt), num any of nums (one value written more than
    once counts as one). Returns (normalized tensor, nodes, eps)."""
    r, nodes, eps = rsqrt(ctx, var)
    if r.op == "Div" and ctx.source(r.inputs[1]) is ctx.source(nodes[1].outputs[0]) and any(ctx.same(r.inputs[0], n) for n in nums):
        return r.outputs[0], nodes, eps
    if r.op == "Div":
        need(close(scalar(r.inputs[0]), 1.0), "Sqrt divides something other than the centred value or 1")
    mul = ctx.consumer(r.outputs[0], "Mul")
    need(any(ctx.same(ctx.other(mul, r.outputs[0]), n) for n in nums), "1 / Sqrt multiplies something other than the centred value")
    return mul.outputs[0], nodes + [mul], eps


def affine(ctx: Ctx, t: gs.Tensor, op: str) -> tuple[gs.Tensor, gs.Node] | None:
    """(constant, node) when t's single consumer is `op` with a constant other input."""
    try:
        n = ctx.consumer(t, op)
    except Skip:
        return None
    other = ctx.other(n, t)
    return (other, n) if const(other) is not None else None


_POLY_OPS = ("Mul", "Div", "Add", "Sub", "Pow", "Neg")


def polynomial(ctx: Ctx, t: gs.Tensor, degree: int = 3) -> tuple[gs.Tensor, list[gs.Node], np.ndarray]:
    """t as a polynomial in one tensor x, written with Mul/Div/Add/Sub/Pow/Neg and scalar
    constants in any association (k*(x + c*x**3), k*x*(1 + c*x*x), x/sqrt(2), ...).
    Intermediate values have one consumer; x is the first value with more (it is also used
    outside). Returns (x, nodes, coefficients a0..a_degree)."""
    nodes: list[gs.Node] = []
    var: list[gs.Tensor] = []

    def walk(u: gs.Tensor) -> np.ndarray:
        c = const(u)
        if c is not None:
            need(c.size == 1 and c.dtype.kind == "f", "a constant in the polynomial is not a scalar")
            return np.array([float(c.reshape(-1)[0])])
        src = ctx.source(u)
        p = producer(src)
        if p is None or p.op not in _POLY_OPS or len(ctx.uses(src)) != 1 or src.name in ctx.outputs:
            var.append(src)
            need(ctx.source(var[0]) is src, "the polynomial has two variables")
            return np.array([0.0, 1.0])
        nodes.append(p)
        need(len(nodes) <= 10, "polynomial too large")
        if p.op == "Neg":
            return -walk(p.inputs[0])
        if p.op == "Pow":
            n = const(p.inputs[1])
            need(n is not None and n.size == 1 and float(n.reshape(-1)[0]) in (1.0, 2.0, 3.0), "Pow exponent is not 1, 2 or 3")
            base = walk(p.inputs[0])
            out = np.array([1.0])
            for _ in range(int(n.reshape(-1)[0])):
                out = np.polynomial.polynomial.polymul(out, base)
            return out
        a = walk(p.inputs[0])
        if p.op == "Div":
            d = const(p.inputs[1])
            need(d is not None and d.size == 1 and float(d.reshape(-1)[0]) != 0, "divisor is not a non-zero constant")
            return a / float(d.reshape(-1)[0])
        b = walk(p.inputs[1])
        f = {"Mul": np.polynomial.polynomial.polymul, "Add": np.polynomial.polynomial.polyadd,
             "Sub": np.polynomial.polynomial.polysub}[p.op]
        return f(a, b)

    coeffs = walk(t)
    need(var, "the polynomial has no variable")
    need(len(coeffs) <= degree + 1, f"polynomial of degree {len(coeffs) - 1} > {degree}")
    return var[0], nodes, np.pad(coeffs, (0, degree + 1 - len(coeffs)))
