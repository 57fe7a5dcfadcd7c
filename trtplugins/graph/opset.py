"""The opset a model imports and the checks every tool runs first (opset range, input ranks)."""

from __future__ import annotations

import onnx

from .errors import GraphError

MIN_OPSET = 13


def opset(model: onnx.ModelProto) -> int:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return int(imp.version)
    raise GraphError("model imports no default-domain (ai.onnx) opset")


def check_supported(model: onnx.ModelProto) -> None:
    """Raise GraphError for an opset or input rank the graph tools do not handle."""
    version, newest = opset(model), onnx.defs.onnx_opset_version()
    if not MIN_OPSET <= version <= newest:
        raise GraphError(f"unsupported opset {version}: supported {MIN_OPSET}..{newest} (re-export or convert with onnx.version_converter)")
    weights = {t.name for t in model.graph.initializer}
    for inp in model.graph.input:
        if inp.name not in weights and inp.type.HasField("tensor_type") and not inp.type.tensor_type.HasField("shape"):
            raise GraphError(f"graph input {inp.name!r} has dynamic rank; export it with a fixed rank (dims may be dynamic)")
