"""GatedActivation: y = act(gate + gate_bias) * (linear + linear_bias), a gated linear unit
(SwiGLU, GEGLU, ReGLU); the operands two tensors, or the two halves of one tensor's last dim.

Its numpy reference, its ONNX patterns and its kernel binding. The subgraphs replaced (act found by
BiasActivation's pattern cores: SiLU as x * Sigmoid(x) or the opset-24 Swish, GELU in its erf, tanh
and opset-20 forms, Relu):

    two tensors (LLaMA: silu(gate_proj(x)) * up_proj(x)), a bias Add before each folded in:
        g -> act -> Mul <- l                                         => GatedActivation(g, l)
    the halves of one tensor (x.chunk(2, -1): a Split, or two Slices bounded by Shape arithmetic),
    either half activated (diffusers' GEGLU activates the second), a bias Add before x folded in:
        x -> Split(last axis) -> [first] -> act -> Mul <- [second]  => GatedActivation(x)

TensorRT fuses the activation into the GEMM that feeds it: a match fed by a MatMul/Gemm/Conv is
left by default (epilogue).
"""

from __future__ import annotations

from typing import Any, ClassVar, Sequence

import numpy as np
import onnx
import onnx_graphsurgeon as gs

from .. import kernels
from ..fusion.match import Ctx, Skip, const, guard, need, producer
from ..fusion.pattern import ActivationPattern, Match, Pattern, bias_add
from ..reference import activation, check_vec, f64
from . import GATED_ACTIVATION, GATED_ACTIVATIONS, spec
from .bias_activation import GeluErf, GeluOp, GeluTanh, Relu, Silu

#: fields and input shapes of one instance (tests, docs)
EXAMPLE = ({"activation": "silu", "gate": "second", "gate_bias": np.linspace(-1, 1, 40, dtype=np.float32)}, [(7, 80)])

# --- reference ------------------------------------------------------------------------------


def reference(
    x: np.ndarray,
    x2: np.ndarray | None = None,
    *,
    activation_name: str = "silu",
    gate: str = "first",
    gate_bias: np.ndarray | None = None,
    linear_bias: np.ndarray | None = None,
) -> np.ndarray:
    """y = act(gate + gate_bias) * (linear + linear_bias). The operands are x and x2 (one shape), or
    without x2 the two halves of x's last dim (as x.chunk(2, -1)); `gate` names the one activated."""
    x = np.asarray(x)
    if x2 is None:
        if x.shape[-1] % 2:
            raise ValueError(f"x has shape {x.shape}: an odd last dim has no two halves")
        first, second = np.split(x.astype(np.float64), 2, axis=-1)
    else:
        if np.shape(x2) != x.shape:
            raise ValueError(f"x2 has shape {np.shape(x2)}, x {x.shape}")
        first, second = x.astype(np.float64), f64(x2)
    if gate not in ("first", "second"):
        raise ValueError(f"gate is {gate!r}; expected first or second")
    g, lin = (first, second) if gate == "first" else (second, first)
    for name, v in (("gate_bias", gate_bias), ("linear_bias", linear_bias)):
        check_vec(name, None if v is None else np.asarray(v), g.shape[-1])
    if gate_bias is not None:
        g = g + f64(gate_bias).reshape(-1)
    if linear_bias is not None:
        lin = lin + f64(linear_bias).reshape(-1)
    if activation_name not in GATED_ACTIVATIONS:
        raise ValueError(f"unknown activation {activation_name!r}; expected one of {GATED_ACTIVATIONS}")
    return (activation(activation_name, g) * lin).astype(x.dtype)


def node_reference(inputs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    return [reference(inputs[0], inputs[1] if len(inputs) > 1 else None, activation_name=attrs["activation"],
                      gate=attrs.get("gate", "first"), gate_bias=attrs.get("gate_bias"),
                      linear_bias=attrs.get("linear_bias"))]


# --- patterns -------------------------------------------------------------------------------

#: the integer arithmetic from Shape(x) to the bounds of x.chunk's Slices (TorchScript)
_SHAPE_OPS = ("Shape", "Gather", "Add", "Sub", "Mul", "Div", "Cast", "Unsqueeze", "Squeeze", "Concat", "Slice", "Identity")


class GatedPattern(Pattern):
    """act(gate) * linear, act matched by `inner`'s core."""

    plugin = GATED_ACTIVATION
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


PATTERNS = (Swiglu(), GegluErf(), GegluTanh(), GegluOp(), Reglu())


# --- kernel binding -------------------------------------------------------------------------

ACTIVATION_IDS = spec(GATED_ACTIVATION).enum_ids("activation")
GATE_IDS = spec(GATED_ACTIVATION).enum_ids("gate")


def launcher(dtype, rows: int, width: int, activation, gate="first"):
    """raw_kernel with all but the pointers resolved once: launch(x, x2, gate_bias, linear_bias, y, stream)
    -> the C entry's code."""
    fn, dt = kernels.load().trtp_gated_activation, kernels.dtype_id(dtype)
    act, which = kernels.lookup(ACTIVATION_IDS, activation, "activation"), kernels.lookup(GATE_IDS, gate, "gate")

    def launch(x, x2, gate_bias, linear_bias, y, stream):
        return fn(dt, x, x2 or None, gate_bias or None, linear_bias or None, y, rows, width, act, which, stream or None)
    return launch


def raw_kernel(dtype, x: int, x2: int, gate_bias: int, linear_bias: int, y: int, rows: int, width: int,
                         activation, gate="first", stream: int = 0):
    launch = launcher(dtype, rows, width, activation, gate)
    kernels.check(launch(x, x2, gate_bias, linear_bias, y, stream), "gated_activation")


def kernel(x, x2=None, *, activation: str = "silu", gate: str = "first", gate_bias=None,
                     linear_bias=None, out=None):
    """y = act(gate + gate_bias) * (linear + linear_bias): the operands x and x2 (one shape), or without
    x2 the halves of x's last dim; `gate` ("first" / "second") names the one activated. `out` may be
    x or x2 (two inputs)."""
    import torch

    last = x.shape[-1]
    if x2 is None and last % 2:
        raise ValueError(f"x {tuple(x.shape)}: an odd last dim has no two halves")
    width = last if x2 is not None else last // 2
    shape = (*x.shape[:-1], width)
    y = torch.empty(shape, dtype=x.dtype, device=x.device) if out is None else out
    if tuple(y.shape) != shape or y.dtype != x.dtype:
        raise ValueError(f"out must be {shape} {x.dtype}; got {tuple(y.shape)} {y.dtype}")
    rows = x.numel() // last if last else 0
    with kernels.on_device(x):
        raw_kernel(
            kernels.dtype_name(x), kernels.data(x, "x"), 0 if x2 is None else kernels.data(x2, "x2", x),
            kernels.weight(gate_bias, "gate_bias", width), kernels.weight(linear_bias, "linear_bias", width), kernels.data(y, "out"),
            rows, width, activation, gate, kernels.stream_of(x),
        )
    return y
