"""Tensor dtypes and shapes for matching decisions.

ONNX Runtime's symbolic shape inference propagates the graph inputs' dim names
through Reshape/Shape arithmetic, so a residual Add of [batch, seq, H] + [batch, seq, H]
is told apart from the broadcast [batch, seq, H] + [1, seq, H]; onnx's own inference
names such dims unk__N and proves nothing. Falls back to onnx's inference when
onnxruntime is missing or gives up (unknown ops)."""

from __future__ import annotations

import logging
import os
import tempfile
import threading

import onnx

_CWD_LOCK = threading.Lock()

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


def _symbolic(model: onnx.ModelProto) -> onnx.ModelProto | None:
    """ORT's symbolic inference, or None. When it gives up it saves a model with external
    data into the working directory, so it runs in a scratch one."""
    if any(n.domain not in ("", "ai.onnx", "com.microsoft") for n in model.graph.node):
        return None  # plugin or custom nodes: it cannot infer them (it knows ONNX Runtime's contrib ops)
    try:
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    except ImportError:
        return None
    logging.getLogger("onnxruntime.tools.symbolic_shape_infer").setLevel(logging.ERROR)
    with _CWD_LOCK, tempfile.TemporaryDirectory() as scratch:
        cwd = os.getcwd()
        os.chdir(scratch)
        try:
            return SymbolicShapeInference.infer_shapes(model, auto_merge=True, guess_output_rank=False)
        except Exception:
            return None
        finally:
            os.chdir(cwd)


def infer(model: onnx.ModelProto) -> Shapes:
    inferred = _symbolic(model)
    if inferred is not None:
        return _collect(inferred)
    try:
        return _collect(onnx.shape_inference.infer_shapes(model))
    except Exception:
        return _collect(model)
