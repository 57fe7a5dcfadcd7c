"""The ONNX side of a build: load, substitute plugin nodes, convert to FP16."""

from __future__ import annotations

import os

from .. import ops
from .errors import BuildError


def plugin_nodes(model) -> list:
    """Nodes the parser will import as plugins of this suite."""
    return [n for n in model.graph.node if n.op_type in ops.OPS or n.domain == ops.DOMAIN]


def node_attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return a.s.decode() if a.s else default
    return default


def load_onnx(path: str | os.PathLike):
    """load_model with its GraphError as a BuildError (the message names the file once)."""
    from ..graph import GraphError, load_model

    try:
        return load_model(path)
    except GraphError as e:
        raise BuildError(str(e)) from None


def prepare(model, substitute: bool = True, fp16: bool = False, log=print, plugin_api: str = ops.DEFAULT_API,
            patterns: list[str] | None = None):
    """Substitute plugin nodes (plugin_api "v2" or "v3"; patterns: graph.substitute's ops, None for the
    default policy), then convert to FP16 (keeping FP32 I/O) if asked.

    Returns (model, substitution report or None).
    """
    from ..graph import GraphError, convert_fp16
    from ..graph import io as graph_io
    from ..graph import substitute as _sub

    report = None
    try:
        with graph_io.in_workspace(model):
            if substitute:
                model, report = _sub(model, patterns, plugin_api=plugin_api)
                log(f"substitution ({plugin_api} plugin nodes): {report}")
            if fp16:
                model = convert_fp16(model, keep_io_types=True)
                log("fp16: converted the model to FP16 (FP32 inputs/outputs kept)")
    except GraphError as e:
        raise BuildError(str(e)) from None
    return model, report
