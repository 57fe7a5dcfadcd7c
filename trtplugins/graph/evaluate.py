"""CPU evaluation of a substituted model: plugin nodes by the numpy reference, every
other node by ONNX Runtime.

The topologically sorted graph is cut into runs of standard nodes; each run becomes its
own ONNX Runtime session (built once per Evaluator), and each plugin node between them
is computed by trtplugins.ops.registry.run_reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from .. import ops
from ..ops.registry import run_reference
from .io import tensor_array


def _is_plugin(node: onnx.NodeProto) -> bool:
    return node.domain == ops.DOMAIN and node.op_type in ops.OPS


def plugin_attrs(node: onnx.NodeProto) -> dict[str, Any]:
    """A plugin node's attributes as run_reference takes them (weights as arrays)."""
    out: dict[str, Any] = {}
    for a in node.attribute:
        v = onnx.helper.get_attribute_value(a)
        out[a.name] = numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else v.decode() if isinstance(v, bytes) else v
    return out


def _used_names(nodes) -> list[str]:
    """Every tensor name the nodes read, subgraph (If/Loop) references included."""
    names: list[str] = []
    for n in nodes:
        names.extend(i for i in n.input if i)
        for a in n.attribute:
            for g in [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs):
                names.extend(_used_names(g.node))
    return names


class Evaluator:
    def __init__(self, model: onnx.ModelProto):
        self.model = model
        graph = model.graph
        self.weights = {t.name: t for t in graph.initializer}
        self.outputs = [o.name for o in graph.output]
        self.types = {vi.name: vi for vi in list(graph.input) + list(graph.value_info) + list(graph.output)}
        self.steps: list[tuple[str, Any]] = []  # ("ort", [nodes]) or ("plugin", node)
        run: list = []
        for node in graph.node:
            if _is_plugin(node):
                if run:
                    self.steps.append(("ort", run))
                    run = []
                self.steps.append(("plugin", node))
            else:
                run.append(node)
        if run:
            self.steps.append(("ort", run))
        self._sessions: dict[int, Any] = {}

    def _needed_after(self, index: int) -> set[str]:
        later: set[str] = set(self.outputs)
        for kind, item in self.steps[index + 1 :]:
            later.update(_used_names(item if kind == "ort" else [item]))
        return later

    def _session(self, index: int, nodes, env: dict[str, np.ndarray]):
        if index in self._sessions:
            return self._sessions[index]
        import onnxruntime as ort

        produced = {o for n in nodes for o in n.output if o}
        reads = list(dict.fromkeys(n for n in _used_names(nodes) if n not in produced))
        inputs = [self.types[n] if n in self.types else _value_info(n, env[n]) for n in reads if n not in self.weights]
        inits = [self.weights[n] for n in reads if n in self.weights]
        later = self._needed_after(index)
        outputs = [self.types.get(o) or onnx.ValueInfoProto(name=o) for n in nodes for o in n.output if o in later]
        inner = [self.types[o] for o in produced if o in self.types and o not in later]
        g = onnx.helper.make_graph(nodes, f"part{index}", inputs, outputs, inits, value_info=inner)
        part = onnx.helper.make_model(g, opset_imports=[o for o in self.model.opset_import if o.domain != ops.DOMAIN],
                                      ir_version=self.model.ir_version)
        part.functions.extend(self.model.functions)
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        # exact semantics: ONNX Runtime's extended fusions can change the math (its LayerNorm
        # fusion was seen ignoring a Pow exponent other than 2); constant folding is kept
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        sess = ort.InferenceSession(part.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        self._sessions[index] = (sess, [i.name for i in inputs], [o.name for o in outputs])
        return self._sessions[index]

    def run(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        env = dict(feeds)
        for index, (kind, item) in enumerate(self.steps):
            if kind == "plugin":
                inputs = [env[i] if i in env else tensor_array(self.weights[i]) for i in item.input]
                for name, value in zip(item.output, run_reference(item.op_type, inputs, plugin_attrs(item))):
                    env[name] = value
                continue
            sess, names, outs = self._session(index, item, env)
            for name, value in zip(outs, sess.run(outs, {n: env[n] for n in names})):
                env[name] = value
        return {o: env[o] for o in self.outputs}


def _value_info(name: str, value: np.ndarray) -> onnx.ValueInfoProto:
    elem = onnx.helper.np_dtype_to_tensor_dtype(np.asarray(value).dtype)
    return onnx.helper.make_tensor_value_info(name, elem, [None] * np.ndim(value))


def evaluate(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Run model on CPU: plugin nodes by the numpy reference, the rest by ONNX Runtime."""
    return Evaluator(model).run(feeds)
