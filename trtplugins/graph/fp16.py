"""FP32 -> FP16 model conversion for TensorRT 11's strong typing.

TensorRT 11 networks are always strongly typed: an FP16 engine comes from an ONNX graph
whose tensors are FP16, so convert the substituted model here and build it as is.

Rules:
- compute ops (MatMul, Conv, Softmax, elementwise, plugin nodes...) run in FP16; plugin
  weights (gamma, beta, bias attributes) become FLOAT16 tensors like their inputs;
- overflow-prone ops stay FP32 (reductions, Pow, Sqrt, Exp, Log, LayerNormalization and
  other normalizations left unfused), and so do the elementwise ops fed by them (the rest
  of a decomposed norm), with Casts at the region borders;
- inputs an op's schema types without float16 (Resize scales...) stay FP32;
- constants are rounded to FP16 with saturation to +-65504 (float32-min attention masks
  stay finite instead of becoming -inf);
- keep_io_types=True keeps FP32 graph inputs/outputs with Casts at the boundary.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .. import ops
from .errors import GraphError

FLOAT, HALF = TensorProto.FLOAT, TensorProto.FLOAT16
FP16_MAX = float(np.finfo(np.float16).max)

KEEP_FP32 = {
    "ReduceMean", "ReduceSum", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
    "ReduceProd", "Pow", "Sqrt", "Exp", "Log", "LayerNormalization", "GroupNormalization",
    "InstanceNormalization", "LpNormalization", "Range", "CumSum", "RandomNormal", "RandomUniform",
    "RandomNormalLike", "RandomUniformLike", "EyeLike", "Multinomial", "NonMaxSuppression",
}
#: elementwise ops that stay FP32 when an FP32-kept op feeds them (the tail of a norm)
FOLLOW = {"Add", "Sub", "Mul", "Div", "Reciprocal", "Neg", "Abs", "Max", "Min", "Clip", "Sqrt"}


def _half(values: np.ndarray) -> np.ndarray:
    return np.clip(values.astype(np.float32), -FP16_MAX, FP16_MAX).astype(np.float16)


def _half_tensor(t: TensorProto, name: str) -> TensorProto:
    from .io import offload, tensor_array

    half = numpy_helper.from_array(_half(tensor_array(t)), name)
    return offload(half) if t.data_location == TensorProto.EXTERNAL else half  # a large model stays small


def _fp16_slots(node: onnx.NodeProto, opset: int) -> tuple[set[int], set[int]] | None:
    """(input indices, output indices) whose schema type allows float16, or None if
    the node must stay FP32 as a whole."""
    if node.domain == ops.DOMAIN:
        return set(range(len(node.input))), set(range(len(node.output)))
    if node.domain not in ("", "ai.onnx") or node.op_type in KEEP_FP32:
        return None
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
        return None
    try:
        schema = onnx.defs.get_schema(node.op_type, opset)
    except Exception:
        return None
    halfable = {c.type_param_str for c in schema.type_constraints if "tensor(float16)" in c.allowed_type_strs}

    def slots(formals, count):
        out = set()
        for i in range(count):
            f = formals[min(i, len(formals) - 1)] if formals else None
            if f is not None and f.type_str in halfable:
                out.add(i)
        return out

    return slots(schema.inputs, len(node.input)), slots(schema.outputs, len(node.output))


def convert_fp16(model: onnx.ModelProto, keep_io_types: bool = True) -> onnx.ModelProto:
    """Return an FP16 copy of an FP32 model (plugin nodes included). Never mutates model."""
    from .opset import opset as model_opset

    opset = model_opset(model)
    try:
        typed = onnx.shape_inference.infer_shapes(model)
    except Exception as e:
        raise GraphError(f"shape inference failed, cannot type the model for FP16: {e}") from None
    g = model.graph
    elem = {vi.name: vi.type.tensor_type.elem_type for vi in list(typed.graph.value_info) + list(g.input) + list(g.output)}
    inits = {t.name: t for t in g.initializer}
    elem.update({n: t.data_type for n, t in inits.items()})
    consts = {n.output[0]: n for n in g.node if n.op_type == "Constant"}
    for name, n in consts.items():
        v = onnx.helper.get_attribute_value(n.attribute[0])
        if isinstance(v, TensorProto):
            elem[name] = v.data_type

    half: set[str] = set()  # tensors that are FP16 in the new graph
    kept: set[str] = set()  # FP32 outputs of FP32-kept ops (their followers stay FP32)
    nodes: list[onnx.NodeProto] = []
    new_inits: list[TensorProto] = []
    cache: dict[tuple[str, int], str] = {}
    graph_inputs = {i.name for i in g.input}
    if not keep_io_types:
        half.update(n for n in graph_inputs if elem.get(n) == FLOAT and n not in inits)

    def unique(base: str) -> str:
        name = base
        while name in elem or name in cache.values():
            name += "_"
        return name

    def as_type(name: str, to: int) -> str:
        """name converted to FP16 (to=HALF) or back to FP32, memoized."""
        if (name, to) in cache:
            return cache[(name, to)]
        out = unique(f"{name}_{'fp16' if to == HALF else 'fp32'}")
        if to == HALF and name in inits:
            new_inits.append(_half_tensor(inits[name], out))
        elif to == HALF and name in consts:
            v = numpy_helper.to_array(onnx.helper.get_attribute_value(consts[name].attribute[0]))
            nodes.append(helper.make_node("Constant", [], [out], value=numpy_helper.from_array(_half(v), out)))
        else:
            nodes.append(helper.make_node("Cast", [name], [out], name=unique(f"{out}_cast"), to=to))
        cache[(name, to)] = out
        return out

    for node in g.node:
        if node.op_type == "Constant" and node.output[0] in consts:
            nodes.append(node)  # converted on demand by its consumers
            continue
        n = onnx.NodeProto()
        n.CopyFrom(node)
        slots = _fp16_slots(node, opset)
        floats_in = [i for i, x in enumerate(node.input) if x and elem.get(x) in (FLOAT, HALF) or x in half]
        follows_fp32 = node.op_type in FOLLOW and any(node.input[i] in kept for i in floats_in)
        to_half = slots is not None and not follows_fp32
        if node.op_type == "Cast":
            to_half = to_half and onnx.helper.get_attribute_value(node.attribute[0]) == FLOAT
        for i, x in enumerate(node.input):
            if not x:
                continue
            if to_half and i in slots[0] and (elem.get(x) == FLOAT or x in half):
                n.input[i] = x if x in half else as_type(x, HALF)
            elif x in half:  # an FP16 tensor into an FP32 slot
                n.input[i] = as_type(x, FLOAT)
        if to_half:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == FLOAT:
                    a.t.CopyFrom(_half_tensor(a.t, a.t.name))
                if node.op_type == "Cast" and a.name == "to":
                    a.i = HALF
            for i, y in enumerate(node.output):
                if i in slots[1] and elem.get(y) in (FLOAT, None):
                    half.add(y)
        else:
            kept.update(y for y in node.output if elem.get(y) == FLOAT)
        nodes.append(n)

    outputs, renamed = [], []
    for o in g.output:
        vo = onnx.ValueInfoProto()
        vo.CopyFrom(o)
        if o.name in half and keep_io_types:
            inner = unique(f"{o.name}_fp16")
            for n in nodes:
                n.output[:] = [inner if y == o.name else y for y in n.output]
                n.input[:] = [inner if x == o.name else x for x in n.input]
            nodes.append(helper.make_node("Cast", [inner], [o.name], name=unique(f"{o.name}_cast"), to=FLOAT))
            half.discard(o.name)
            half.add(inner)
            vi = onnx.ValueInfoProto()
            vi.CopyFrom(o)
            vi.name = inner
            vi.type.tensor_type.elem_type = HALF
            renamed.append(vi)
        elif o.name in half:
            vo.type.tensor_type.elem_type = HALF
        outputs.append(vo)

    inputs = []
    for i in g.input:
        vi = onnx.ValueInfoProto()
        vi.CopyFrom(i)
        if i.name in half and not keep_io_types:
            vi.type.tensor_type.elem_type = HALF
        inputs.append(vi)

    value_info = renamed
    for vi in g.value_info:
        v = onnx.ValueInfoProto()
        v.CopyFrom(vi)
        if v.name in half:
            v.type.tensor_type.elem_type = HALF
        value_info.append(v)

    used = {x for n in nodes for x in n.input}
    out_graph = helper.make_graph(
        nodes, g.name, inputs, outputs,
        [t for t in g.initializer if t.name in used] + [t for t in new_inits if t.name in used],
        doc_string=g.doc_string, value_info=value_info,
    )
    out = onnx.ModelProto()
    out.CopyFrom(model)
    out.graph.CopyFrom(out_graph)
    try:
        onnx.checker.check_model(out, full_check=True)
    except Exception as e:
        raise GraphError(f"FP16 model fails onnx.checker (a bug in trtplugins.graph.fp16): {e}") from e
    return out
