"""ONNX export of the trtplugins ops as plugin nodes (domain trtplugins, the fields as attributes,
weights as TENSOR attributes, plugin_version "2" (IPluginV3) or "1").

Both exporters first write a node per op with its tensors as inputs (weights included) and an
attribute naming them (`trtplugins_inputs`); to_plugin_nodes then moves each weight, an
initializer or a Constant, into the attribute of its field, as trtplugins.graph writes plugin
nodes. export() does both in one call:

    trtplugins.torch.export(model, (x,), "model.onnx")                  # dynamo exporter
    trtplugins.torch.export(model, (x,), "model.onnx", dynamo=False)    # TorchScript exporter
"""

from __future__ import annotations

import functools
import inspect
from pathlib import Path

import onnx
import torch

from .. import ops
from ..graph.errors import GraphError
from .library import NAMESPACE, PLUGINS, bind, op_name

ROLES = "trtplugins_inputs"  # the intermediate node's attribute naming its inputs
_ATTR_KINDS = {"string": str, "float": float, "int": int}


def _present(spec: ops.OpSpec, a: dict) -> tuple[list, list[str], dict]:
    """The tensors given (inputs, then weights), their names, and the other fields."""
    names = [t.name for t in spec.inputs] + [f.name for f in spec.fields if f.kind == "weights"]
    given = [n for n in names if a.get(n) is not None]
    attrs = {f.name: a[f.name] for f in spec.fields if f.kind != "weights"}
    return [a[n] for n in given], given, attrs


@functools.lru_cache(maxsize=None)
def _schema(plugin: str, outputs: int) -> onnx.defs.OpSchema:
    """An (unregistered) ONNX schema of the intermediate node, for the dynamo exporter's recorder."""
    spec = ops.spec(plugin)
    S = onnx.defs.OpSchema
    attr = {str: S.AttrType.STRING, float: S.AttrType.FLOAT, int: S.AttrType.INT}
    return S(plugin, ops.DOMAIN, 1,
             inputs=[S.FormalParameter("inputs", "T", param_option=S.FormalParameterOption.Variadic,
                                       is_homogeneous=False)],
             outputs=[S.FormalParameter(t.name, "T") for t in spec.outputs[:outputs]],
             type_constraints=[("T", [f"tensor({'float' if t == 'float32' else t})" for t in spec.types], "")],
             attributes=[S.Attribute(f.name, attr[_ATTR_KINDS[f.kind]], required=False)
                         for f in spec.fields if f.kind != "weights"] + [S.Attribute(ROLES, S.AttrType.STRINGS)])


def _dynamo_translation(plugin: str):
    """A translation function for torch.onnx.export(dynamo=True, custom_translation_table=...)."""
    import onnxscript

    spec = ops.spec(plugin)
    opset = onnxscript.values.Opset(ops.DOMAIN, 1)

    def translate(*args, **kwargs):
        tensors, names, attrs = _present(spec, bind(spec, args, kwargs))
        n = spec.num_outputs(attrs)
        out = onnxscript.values.Op(opset, plugin, _schema(plugin, n))(*tensors, **attrs, **{ROLES: names})
        outs = list(out) if n > 1 else [out]
        return outs if any(t.when for t in spec.outputs) else outs[0]

    P = inspect.Parameter  # the op's signature: the exporter reads inputs and attributes from it
    params = [P(t.name, P.POSITIONAL_OR_KEYWORD, default=None if t.optional else P.empty) for t in spec.inputs]
    params += [P(f.name, P.KEYWORD_ONLY, default=P.empty if f.required else f.default) for f in spec.fields]
    translate.__signature__ = inspect.Signature(params)
    translate.__annotations__ = {f.name: _ATTR_KINDS[f.kind] for f in spec.fields if f.kind != "weights"}
    translate.__name__ = op_name(plugin)
    return translate


def translations() -> dict:
    """custom_translation_table for torch.onnx.export(dynamo=True): the ops as intermediate nodes
    (run to_plugin_nodes on the result)."""
    return {getattr(getattr(torch.ops, NAMESPACE), op_name(p)).default: _dynamo_translation(p) for p in PLUGINS}


def _torchscript_symbolic(plugin: str):
    from torch.onnx import symbolic_helper as sh

    spec = ops.spec(plugin)
    kinds = {"string": "s", "float": "f", "int": "i", "weights": "v"}

    def symbolic(g, *args):
        values = dict(zip([t.name for t in spec.inputs] + [f.name for f in spec.fields], args))
        a = {}
        for name, v in values.items():
            kind = next((kinds[f.kind] for f in spec.fields if f.name == name), "v")
            a[name] = None if kind == "v" and sh._is_none(v) else v if kind == "v" else sh._get_const(v, kind, name)
        tensors, names, attrs = _present(spec, a)
        typed = {f"{f.name}_{kinds[f.kind]}": attrs[f.name] for f in spec.fields if f.kind != "weights"}
        n = spec.num_outputs(attrs)
        out = g.op(f"{ops.DOMAIN}::{plugin}", *tensors, **typed, **{f"{ROLES}_s": names}, outputs=n)
        x = tensors[0].type()
        for o in out if n > 1 else [out]:  # x's type; GatedActivation's last dim may be halved
            o.setType(x if plugin != ops.GATED_ACTIVATION else x.with_sizes([None] * (x.dim() or 0)))
        if not any(t.when for t in spec.outputs):
            return out
        return g.op("prim::ListConstruct", *(out if n > 1 else [out]))  # the op returns Tensor[]

    return symbolic


_registered_torchscript = False


def register_torchscript() -> None:
    """Symbolic functions for the TorchScript exporter (torch.onnx.export(dynamo=False)), once."""
    global _registered_torchscript
    if not _registered_torchscript:
        for p in PLUGINS:
            torch.onnx.register_custom_op_symbolic(f"{NAMESPACE}::{op_name(p)}", _torchscript_symbolic(p), 9)
        _registered_torchscript = True


def to_plugin_nodes(model: onnx.ModelProto, plugin_version: str = ops.V3_VERSION) -> onnx.ModelProto:
    """Turn the exporters' intermediate nodes into plugin nodes, in place: weights (initializers or
    Constant outputs) into TENSOR attributes, plugin_version set. Returns model."""
    if plugin_version not in ops.VERSIONS.values():
        raise ValueError(f"plugin_version {plugin_version!r}: one of {', '.join(ops.VERSIONS.values())}")
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    consts = {n.output[0]: n.attribute[0].t for n in graph.node
              if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and n.attribute[0].name == "value"}
    for node in graph.node:
        roles = next((a for a in node.attribute if a.name == ROLES), None)
        if node.domain != ops.DOMAIN or roles is None:
            continue
        spec = ops.spec(node.op_type)
        data = []
        for role, name in zip([s.decode() for s in roles.strings], list(node.input)):
            if role in {t.name for t in spec.inputs}:
                data.append(name)
                continue
            weight = inits.get(name) or consts.get(name)
            if weight is None:
                raise GraphError(f"{node.op_type} node {node.name!r}: {role} ({name!r}) is computed in the graph; "
                                 "a plugin takes its weights as fields (constants)")
            t = onnx.TensorProto()
            t.CopyFrom(weight)
            t.name = ""
            node.attribute.append(onnx.helper.make_attribute(role, t))
        del node.input[:]
        node.input.extend(data)
        node.attribute.remove(roles)
        node.attribute.append(onnx.helper.make_attribute("plugin_version", plugin_version))
    used = {i for n in graph.node for i in n.input} | {o.name for o in graph.output}
    keep = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(keep)
    dead = [n for n in graph.node if n.op_type == "Constant" and n.output[0] in consts and n.output[0] not in used]
    for n in dead:
        graph.node.remove(n)
    if not any(o.domain == ops.DOMAIN for o in model.opset_import):
        model.opset_import.append(onnx.helper.make_opsetid(ops.DOMAIN, 1))
    return model


def export(model: torch.nn.Module, args: tuple, f: str | Path | None = None, *, plugin_version: str = ops.V3_VERSION,
           dynamo: bool = True, **options) -> onnx.ModelProto:
    """torch.onnx.export with the ops written as plugin nodes; saves to f when given and returns the
    model. options go to torch.onnx.export (input_names, dynamic_shapes / dynamic_axes, opset_version, ...)."""
    with torch.no_grad():
        if dynamo:
            table = {**translations(), **options.pop("custom_translation_table", {})}
            proto = torch.onnx.export(model, args, dynamo=True, custom_translation_table=table, **options).model_proto
        else:
            import io

            register_torchscript()
            buf = io.BytesIO()
            torch.onnx.export(model, args, buf, dynamo=False, custom_opsets={ops.DOMAIN: 1}, **options)
            proto = onnx.load_from_string(buf.getvalue())
    to_plugin_nodes(proto, plugin_version)
    if f is not None:
        from ..graph.io import save_model

        save_model(proto, f)
    return proto
