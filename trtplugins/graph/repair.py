"""Make a model ONNX Runtime runs into one onnx.checker accepts, saying what was done.

ONNX Runtime loads graphs the checker refuses: nodes out of topological order (it sorts
them), contrib (com.microsoft) nodes without that opset import, and `LayerNormalization`
in the default domain below opset 17 (hand-built graphs; it means the opset-17 op), and the
deprecated GroupNormalization-18 (converted to opset 21, whose scale and bias are per channel).
Models below opset 13 are converted with onnx.version_converter when it succeeds.
Everything else that fails the checker is refused with the checker's own message and the
node it names."""

from __future__ import annotations

import re

import onnx
from onnx import version_converter

from .errors import GraphError
from .opset import MIN_OPSET, check_supported, opset

CONTRIB = "com.microsoft"
LAYER_NORM_OPSET = 17
GROUP_NORM_OPSET = 21  # GroupNormalization-18 (scale and bias per group) is deprecated: the checker refuses it
_HIDDEN = "trtplugins.hidden"  # LayerNormalization parked here while the converter runs


def _sorted_nodes(graph: onnx.GraphProto) -> list[onnx.NodeProto] | None:
    """The graph's nodes in a topological order (stable), or None when there is none."""
    known = {t.name for t in graph.initializer} | {i.name for i in graph.input} | {""}
    nodes = list(graph.node)

    def reads(n: onnx.NodeProto) -> set[str]:
        names = set(n.input)
        for a in n.attribute:  # subgraphs read outer-scope names too
            for g in [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs):
                inner = {o for m in g.node for o in m.output} | {i.name for i in g.input} | {t.name for t in g.initializer}
                names |= {r for m in g.node for r in reads(m)} - inner
        return names

    pending = [(n, reads(n)) for n in nodes]
    producers = {o for n in nodes for o in n.output}
    out: list[onnx.NodeProto] = []
    while pending:
        rest = []
        for n, r in pending:
            if all(x in known or x not in producers for x in r):
                out.append(n)
                known.update(n.output)
            else:
                rest.append((n, r))
        if len(rest) == len(pending):
            return None  # a cycle: leave it to the checker's message
        pending = rest
    return out


def _is_sorted(graph: onnx.GraphProto) -> bool:
    seen = {t.name for t in graph.initializer} | {i.name for i in graph.input} | {""}
    producers = {o for n in graph.node for o in n.output}
    for n in graph.node:
        if any(i in producers and i not in seen for i in n.input):
            return False
        seen.update(n.output)
    return True


def _convert(model: onnx.ModelProto, target: int) -> onnx.ModelProto:
    """onnx.version_converter to target, with default-domain LayerNormalization nodes
    parked in a private domain (the converter knows no such op below opset 17)."""
    work = onnx.ModelProto()
    work.CopyFrom(model)
    parked = [n for n in work.graph.node if n.op_type == "LayerNormalization" and n.domain in ("", "ai.onnx")]
    for n in parked:
        n.domain = _HIDDEN
    if parked:
        work.opset_import.append(onnx.helper.make_opsetid(_HIDDEN, 1))
    out = version_converter.convert_version(work, target)
    for n in out.graph.node:
        if n.domain == _HIDDEN:
            n.domain = ""
    keep = [o for o in out.opset_import if o.domain != _HIDDEN]
    del out.opset_import[:]
    out.opset_import.extend(keep)
    return out


def checker_message(e: Exception) -> str:
    """The checker's first line, and the node its context names."""
    text = str(e)
    first = text.strip().splitlines()[0] if text.strip() else type(e).__name__
    node = re.search(r"Name:\s*(\S*)\s+OpType:\s*(\S+)", text)
    return f"{first} (node {node.group(1)!r}, {node.group(2)})" if node and node.group(1) not in first else first


def repaired(model: onnx.ModelProto) -> tuple[onnx.ModelProto, list[str]]:
    """(model checked, or a repaired copy of it; notes on what was changed). GraphError
    when the model cannot be used: the checker's own message, naming the node. model is
    never modified (and copied only when something changes: models can be large)."""
    out, notes = model, []

    def own() -> onnx.ModelProto:
        nonlocal out
        if out is model:
            out = onnx.ModelProto()
            out.CopyFrom(model)
        return out

    version = opset(out)
    domains = {o.domain for o in out.opset_import}
    if any(n.domain == CONTRIB for n in out.graph.node) and CONTRIB not in domains:
        own().opset_import.append(onnx.helper.make_opsetid(CONTRIB, 1))
        notes.append(f"added the missing {CONTRIB} opset import")
    if not _is_sorted(out.graph):
        order = _sorted_nodes(out.graph)
        if order is not None:
            order = [onnx.NodeProto.FromString(n.SerializeToString()) for n in order]
            del own().graph.node[:]
            out.graph.node.extend(order)
            notes.append("sorted the nodes topologically")
    lone_ln = version < LAYER_NORM_OPSET and any(
        n.op_type == "LayerNormalization" and n.domain in ("", "ai.onnx") for n in out.graph.node)
    old_gn = 18 <= version < GROUP_NORM_OPSET and any(
        n.op_type == "GroupNormalization" and n.domain in ("", "ai.onnx") for n in out.graph.node)
    target = LAYER_NORM_OPSET if lone_ln else GROUP_NORM_OPSET if old_gn else MIN_OPSET if version < MIN_OPSET else None
    if target is not None:
        why = ("LayerNormalization in the default domain is the opset-17 op" if lone_ln else
               "GroupNormalization-18 is deprecated" if old_gn else f"opset {version} < {MIN_OPSET}")
        try:
            out = _convert(out, target)
        except Exception as e:
            if version < MIN_OPSET:
                raise GraphError(f"unsupported opset {version}: supported {MIN_OPSET}..{onnx.defs.onnx_opset_version()}, "
                                 f"and onnx.version_converter could not convert it: {checker_message(e)}") from None
            what = "GroupNormalization-18 (deprecated)" if old_gn else "LayerNormalization at opset {version} (an op since opset 17)"
            raise GraphError(f"{what.format(version=version)}: converting the model to opset {target} failed: "
                             f"{checker_message(e)}") from None
        notes.append(f"converted opset {version} -> {target} with onnx.version_converter ({why})")
    bare = [o.name for o in out.graph.output if not o.type.tensor_type.HasField("shape")]
    if bare:  # ONNX Runtime runs graph outputs declared without a shape; the checker wants one
        try:
            inferred = onnx.shape_inference.infer_shapes(out).graph
            known = {v.name: v for v in list(inferred.value_info) + list(inferred.output)}
        except Exception:
            known = {}
        filled = [name for name in bare if name in known and known[name].type.tensor_type.HasField("shape")]
        for o in own().graph.output if filled else []:
            if o.name in filled:
                o.type.CopyFrom(known[o.name].type)
        if filled:
            notes.append(f"gave graph outputs {filled} the shape inference found (declared without one)")
    check_supported(out)
    try:
        onnx.checker.check_model(out)
    except Exception as e:
        raise GraphError(f"invalid ONNX model: {checker_message(e)}") from None
    return out, notes


__all__ = ["checker_message", "repaired"]
