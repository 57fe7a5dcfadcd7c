"""Apply the patterns to a model: match everything first, then one batch of edits,
one cleanup + toposort + full check, and a report of what was replaced and what was left."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import onnx
import onnx_graphsurgeon as gs

from .. import ops as plugin_ops
from . import shapes as shape_info
from .errors import GraphError
from ..fusion.match import Ctx, Skip, close, producer, producer_op, reduce_last_axis, scalar
from ..fusion.pattern import Match
from ..ops.registry import select
from .repair import repaired


@dataclass
class Report:
    nodes_before: int = 0
    nodes_after: int = 0
    replaced: list[dict] = field(default_factory=list)  # one per plugin node written
    left: list[dict] = field(default_factory=list)  # candidates not replaced, with the reason
    notes: list[str] = field(default_factory=list)  # what was changed to make the model checkable
    candidates: int = 0  # nodes starting a norm/GELU candidate: each fused or in `left`

    def counts(self) -> dict[str, dict]:
        """Per pattern: plugin, matches replaced, original nodes removed, variants."""
        out: dict[str, dict] = {}
        for r in self.replaced:
            c = out.setdefault(r["pattern"], {"plugin": r["plugin"], "matches": 0, "nodes_removed": 0, "variants": Counter()})
            c["matches"] += 1
            c["nodes_removed"] += len(r["nodes"])
            c["variants"][r["variant"]] += 1
        return {k: {**v, "variants": dict(v["variants"])} for k, v in out.items()}

    def plugins(self) -> dict[str, int]:
        return dict(Counter(r["plugin"] for r in self.replaced))

    def to_dict(self) -> dict:
        return {
            "nodes_before": self.nodes_before,
            "nodes_after": self.nodes_after,
            "plugins": self.plugins(),
            "patterns": self.counts(),
            "replaced": self.replaced,
            "left": self.left,
            "notes": self.notes,
            "candidates": self.candidates,
        }

    def __str__(self) -> str:
        lines = [f"note: {n}" for n in self.notes] + [f"nodes: {self.nodes_before} -> {self.nodes_after}"]
        for name, c in self.counts().items():
            variants = ", ".join(f"{k} x{n}" for k, n in sorted(c["variants"].items()))
            lines.append(f"  {name:<14} -> {c['plugin']:<15} {c['matches']:>3} matches, {c['nodes_removed']:>4} nodes removed  ({variants})")
        if not self.replaced:
            lines.append("  no pattern replaced")
        for note, n in Counter(note for r in self.replaced for note in r.get("notes", [])).items():
            lines.append(f"  accepted {n:>3} x {note}")
        for reason, n in Counter(f"{r['pattern']}: {r['reason']}" for r in self.left).items():
            lines.append(f"  left {n:>3} x {reason}")
        if self.candidates:
            lines.append(f"  {self.candidates} norm/GELU candidates, each replaced or left above")
        return "\n".join(lines)

    def json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


#: TensorRT fuses a bias + activation into the epilogue of these (issue 13 item 14)
EPILOGUE_OPS = ("MatMul", "Gemm", "Conv", "ConvTranspose")
#: moves no data: a GEMM seen through them still feeds the activation
RESHAPES = ("Reshape", "Flatten", "Squeeze", "Unsqueeze")


def _feed(t, ctx: Ctx) -> str:
    """The op computing t, seen through reshapes (tf2onnx's Tensordot: MatMul -> Reshape -> bias)."""
    feed = producer(ctx.source(t))
    while feed is not None and feed.op in RESHAPES:
        feed = producer(ctx.source(feed.inputs[0]))
    return feed.op if feed is not None else "graph input"


def policy(m: Match, ctx: Ctx) -> str | None:
    """Why the default policy leaves a match, or None to replace it."""
    p = m.pattern
    if p.epilogue:
        feeds = [_feed(t, ctx) for t in m.inputs]
        src = next((f for f in feeds if f in EPILOGUE_OPS), None)
        if src:
            return (f"{p.what(m)} after {src}: TensorRT fuses it into the {src} epilogue "
                    f"(ask with --ops {p.name} or --ops all)")
        if p.native and "bias" not in m.attrs:
            return f"lone {p.activation} after {feeds[0]}: TensorRT fuses it natively (ask with --ops {p.name})"
    real = [n for n in m.nodes if not ctx.glue(n)]  # Identity/no-op Casts are no work saved
    if len(real) < 2 and not p.single_op:
        return f"single {real[0].op} op: TensorRT runs it natively (ask with --ops {p.name})"
    return None


def _unsupported_type(m: Match, ctx: Ctx) -> None:
    """Skip a match whose plugin would see a tensor type its declaration does not take."""
    spec = plugin_ops.spec(m.pattern.plugin)
    for t in list(m.inputs) + list(m.outputs):
        elem = ctx.dtype(t)
        name = "unknown" if not elem else "bfloat16" if elem == onnx.TensorProto.BFLOAT16 else \
            onnx.helper.tensor_dtype_to_np_dtype(elem).name
        if name not in spec.types:
            raise Skip(f"{t.name!r} is {name}: {spec.name} takes {'/'.join(spec.types)}")


def _candidate(node: gs.Node, ctx: Ctx) -> str | None:
    """The pattern a node starting a norm/GELU candidate belongs to (issue 15: no silent skip)."""
    if node.op in ("Erf", "Tanh"):
        return {"Erf": "gelu_erf", "Tanh": "gelu_tanh"}[node.op]
    if node.op == "ReduceMean" and reduce_last_axis(node, ctx):
        return None if _square(producer(node.inputs[0]), ctx) else "layer_norm"
    if _square(node, ctx) and any(c.op == "ReduceMean" and reduce_last_axis(c, ctx) for c in ctx.uses(node.outputs[0])):
        base = producer(ctx.source(node.inputs[0]))
        centred = base is not None and base.op == "Sub" and producer_op(ctx.source(base.inputs[1]), "ReduceMean")
        return None if centred else "rms_norm"
    return None


def _square(n: gs.Node | None, ctx: Ctx) -> bool:
    if n is None or len(n.inputs) != 2:
        return False
    if n.op == "Pow":
        return close(scalar(n.inputs[1]), 2.0)
    return n.op == "Mul" and ctx.source(n.inputs[0]) is ctx.source(n.inputs[1])


def _absorb_glue(m: Match, ctx: Ctx) -> None:
    """Take in the no-op Casts/Identities between matched nodes (LLaMA's .to(dtype))."""
    ids = {id(n) for n in m.nodes}
    grown = True
    while grown:
        grown = False
        for t in [t for n in m.nodes for t in n.outputs] + [t for n in m.nodes for t in n.inputs]:
            for glue in list(t.outputs) + list(t.inputs):
                if id(glue) in ids or not ctx.glue(glue) or glue.outputs[0] in m.inputs:
                    continue
                out = glue.outputs[0]
                if ctx.private(out, m.nodes) and out.outputs:
                    m.nodes.append(glue)
                    ids.add(id(glue))
                    grown = True


def _check_private(m: Match, ctx: Ctx) -> None:
    ids = {id(n) for n in m.nodes}
    outs = {id(t) for t in m.outputs}
    for n in m.nodes:
        for t in n.outputs:
            if id(t) not in outs and not ctx.private(t, m.nodes):
                raise Skip(f"intermediate {t.name!r} is used outside the pattern")
    if any(id(p) in ids for t in m.inputs for p in t.inputs):
        raise Skip("an input is computed inside the pattern")


def _attrs(m: Match, version: str) -> dict:
    spec = plugin_ops.spec(m.pattern.plugin)
    attrs = {}
    for f in spec.fields:
        if f.name not in m.attrs:
            continue
        v = m.attrs[f.name]
        attrs[f.name] = gs.Constant(f.name, np.asarray(v, np.float32)) if f.kind == "weights" else v
    attrs["plugin_version"] = version
    return attrs


def _typed(t: gs.Variable, ctx: Ctx) -> None:
    """Give a plugin output the dtype/shape shape inference found (it cannot see through plugins)."""
    info = ctx.shapes.get(t.name)
    if info is None:
        return
    if t.dtype is None and info[0]:
        t.dtype = onnx.helper.tensor_dtype_to_np_dtype(info[0])
    if t.shape is None and info[1] is not None:
        t.shape = [d if d is not None else "" for d in info[1]]


def substitute(model: onnx.ModelProto, ops: str | list[str] | None = None,
               plugin_api: str = plugin_ops.DEFAULT_API) -> tuple[onnx.ModelProto, Report]:
    """Replace fusable subgraphs with plugin nodes. Never mutates model.

    ops: None for the default policy, else pattern names / plugin names / "default" / "all"
    (see ops.registry.select), one name as a string or a list; a pattern named explicitly is
    replaced wherever it matches.
    plugin_api: "v3" (plugin_version "2", IPluginV3: TensorRT 10+, and all TensorRT-RTX imports)
    or "v2" (plugin_version "1", IPluginV2DynamicExt: engines built before V3 existed)."""
    if plugin_api not in plugin_ops.VERSIONS:
        raise GraphError(f"unknown plugin API {plugin_api!r}; expected one of {', '.join(plugin_ops.VERSIONS)}")
    version = plugin_ops.VERSIONS[plugin_api]
    if isinstance(ops, str):
        ops = [ops]
    model, notes = repaired(model)
    try:
        selection = select(ops)
    except ValueError as e:
        raise GraphError(str(e)) from None
    work = onnx.ModelProto()
    work.CopyFrom(model)  # onnx-graphsurgeon keeps references into the proto it imports
    ctx = Ctx(gs.import_onnx(work), shape_info.infer(model))
    graph = ctx.graph
    report = Report(nodes_before=len(model.graph.node), notes=notes)
    claimed = ctx.claimed
    held: set[int] = set()  # nodes of matches the policy left: no smaller form is fused out of them
    matches: list[Match] = []
    tried: dict[tuple[int, str], str] = {}  # (anchor, pattern) -> first condition that failed
    reported: set[int] = set()

    def leave(pattern: str, node: gs.Node, reason: str) -> None:
        report.left.append({"pattern": pattern, "anchor": node.name, "reason": reason})
        reported.add(id(node))

    for pattern, forced in selection:
        for node in list(graph.nodes):
            if node.op not in pattern.anchors or id(node) in claimed:
                continue
            ctx.notes = []
            try:
                m = pattern.match(node, ctx)
                _absorb_glue(m, ctx)
                _check_private(m, ctx)
                _unsupported_type(m, ctx)
            except Skip as e:
                tried[id(node), pattern.name] = e.reason
                if e.guard:
                    leave(pattern.name, node, e.reason)
                continue
            if any(id(n) in claimed or id(n) in held for n in m.nodes):
                tried[id(node), pattern.name] = "overlaps a match already taken or left"
                continue
            reason = None if forced else policy(m, ctx)
            if reason:
                leave(pattern.name, node, reason)
                held.update(id(n) for n in m.nodes)
                continue
            m.notes = ctx.notes
            claimed.update(id(n) for n in m.nodes)
            matches.append(m)
    selected = {p.name for p, _ in selection}
    for node in graph.nodes:  # every norm/GELU candidate is fused or has its left entry
        kind = _candidate(node, ctx)
        if kind is None:
            continue
        report.candidates += 1
        if id(node) in claimed or id(node) in reported:
            continue
        why = tried.get((id(node), kind)) or ("not selected by --ops" if kind not in selected else "no pattern matched")
        leave(kind, node, why)

    if not matches:
        out = onnx.ModelProto()
        out.CopyFrom(model)
        report.nodes_after = report.nodes_before
        return out, report

    names = {n.name for n in graph.nodes}
    for i, m in enumerate(matches):
        for n in m.nodes:
            n.inputs.clear()
            n.outputs.clear()
        for n, i in m.drop_inputs:
            del n.inputs[i]
        for t in m.outputs:
            _typed(t, ctx)
        name = f"{m.pattern.plugin}_{i}"
        while name in names:
            name += "_"
        names.add(name)
        graph.nodes.append(gs.Node(m.pattern.plugin, name, _attrs(m, version), list(m.inputs), list(m.outputs), domain=plugin_ops.DOMAIN))
        report.replaced.append({
            "pattern": m.pattern.name, "plugin": m.pattern.plugin, "variant": m.variant, "node": name,
            "anchor": m.anchor.name, "nodes": [n.name for n in m.nodes], **({"notes": m.notes} if m.notes else {}),
        })
    graph.cleanup(remove_unused_graph_inputs=False).toposort()
    out = gs.export_onnx(graph)
    _restore_header(model, out)
    try:
        onnx.checker.check_model(out, full_check=True)
    except Exception as e:
        raise GraphError(f"substituted model fails onnx.checker (a bug in trtplugins.graph): {e}") from e
    report.nodes_after = len(out.graph.node)
    return out, report



def _restore_header(src: onnx.ModelProto, out: onnx.ModelProto) -> None:
    """Keep the source's IR version, producer and metadata; import the plugin domain."""
    out.ir_version = src.ir_version
    out.producer_name, out.producer_version = src.producer_name, src.producer_version
    out.domain, out.model_version, out.doc_string = src.domain, src.model_version, src.doc_string
    del out.metadata_props[:]
    out.metadata_props.extend(src.metadata_props)
    del out.opset_import[:]
    out.opset_import.extend(src.opset_import)
    if not any(o.domain == plugin_ops.DOMAIN for o in out.opset_import):
        out.opset_import.append(onnx.helper.make_opsetid(plugin_ops.DOMAIN, 1))
