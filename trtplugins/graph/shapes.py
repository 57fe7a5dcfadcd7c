"""Tensor dtypes and shapes for matching decisions.

ONNX Runtime's symbolic shape inference propagates the graph inputs' dim names
through Reshape/Shape arithmetic, so a residual Add of [batch, seq, H] + [batch, seq, H]
is told apart from the broadcast [batch, seq, H] + [1, seq, H]; onnx's own inference
names such dims unk__N and proves nothing. Falls back to onnx's inference when
onnxruntime is missing or gives up (unknown ops)."""

from __future__ import annotations

import logging

import onnx

Shapes = dict[str, tuple[int, list | None]]


def _collect(model: onnx.ModelProto) -> Shapes:
    out: Shapes = {}
    g = model.graph
    for t in g.initializer:
        out[t.name] = (t.data_type, list(t.dims))
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            continue
        dims = None
        if tt.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim]
        old = out.get(vi.name)
        if old is None or (old[1] is None and dims is not None) or old[0] == 0:
            out[vi.name] = (tt.elem_type, dims)
    return out


def infer(model: onnx.ModelProto) -> Shapes:
    try:
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

        logging.getLogger("onnxruntime.tools.symbolic_shape_infer").setLevel(logging.ERROR)
        inferred = SymbolicShapeInference.infer_shapes(model, auto_merge=True, guess_output_rank=False)
        if inferred is not None:
            return _collect(inferred)
    except Exception:  # onnxruntime absent, or an op it cannot infer (plugin nodes)
        pass
    try:
        return _collect(onnx.shape_inference.infer_shapes(model))
    except Exception:
        return _collect(model)
