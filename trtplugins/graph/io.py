"""Loading a model with clear errors, and the checks every tool runs first."""

from __future__ import annotations

from pathlib import Path

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


def load_model(path: str | Path) -> onnx.ModelProto:
    """Load and check an ONNX model; GraphError says what is wrong with the file."""
    path = Path(path)
    if not path.is_file():
        raise GraphError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise GraphError(f"{path}: empty file, not an ONNX model")
    try:
        model = onnx.load(str(path))
    except Exception as e:  # protobuf DecodeError, missing external data, ...
        raise GraphError(f"{path}: not a readable ONNX model (truncated or another format?): {e}") from None
    if not model.opset_import or not model.graph.ByteSize():
        raise GraphError(f"{path}: not an ONNX model (no graph or opset_import)")
    from .repair import repaired  # what ONNX Runtime runs is accepted; substitute() says what it changed

    try:
        repaired(model)
    except GraphError as e:
        raise GraphError(f"{path}: {e}") from None
    return model
