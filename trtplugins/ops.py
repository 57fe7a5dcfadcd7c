"""Declarative spec of every plugin in the native library.

One entry per fused op. The C++ creators declare the same fields; a test
checks the two agree against the real TensorRT registry. The graph tools
write ONNX plugin nodes from this spec, and `create_plugin` types Python
values with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: ONNX domain of plugin nodes written by the graph tools. TensorRT's parser
#: ignores node.domain; it only keeps the nodes apart from standard ONNX ops.
DOMAIN = "trtplugins"
VERSION = "1"
NAMESPACE = ""


@dataclass(frozen=True)
class Field:
    """One creator field.

    kind: "string" (kCHAR), "float" (kFLOAT32), "int" (kINT32) or
    "weights" (a 1-D tensor: kFLOAT32, kFLOAT16 or kBF16).
    """

    name: str
    kind: str
    required: bool = False
    default: Any = None
    choices: tuple[str, ...] = ()
    doc: str = ""


@dataclass(frozen=True)
class OpSpec:
    name: str  # plugin name == ONNX op_type
    fields: tuple[Field, ...]
    min_inputs: int
    max_inputs: int
    doc: str = ""
    version: str = VERSION
    #: I/O tensor types the plugin takes (supportsFormatCombination); the graph tools
    #: write no plugin node on any other type
    types: tuple[str, ...] = ("float32", "float16", "bfloat16")

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no field {name!r}; fields: {[f.name for f in self.fields]}")

    def num_outputs(self, attrs: dict[str, Any]) -> int:
        return 2 if self.name == SKIP_NORM and int(attrs.get("output_sum", 0)) else 1


ACTIVATIONS = ("identity", "relu", "relu6", "gelu", "gelu_tanh", "silu", "quick_gelu", "hard_swish")
NORMS = ("layer", "rms")

BIAS_ACTIVATION = "BiasActivation"
SKIP_NORM = "SkipNorm"

OPS: dict[str, OpSpec] = {
    BIAS_ACTIVATION: OpSpec(
        name=BIAS_ACTIVATION,
        doc="y = act(x + bias); bias optional, broadcast over the last dim.",
        min_inputs=1,
        max_inputs=1,
        fields=(
            Field("activation", "string", required=True, choices=ACTIVATIONS),
            Field("bias", "weights", doc="length == last dim of x"),
        ),
    ),
    SKIP_NORM: OpSpec(
        name=SKIP_NORM,
        doc="s = x (+ skip) (+ bias); y = norm(s) * gamma (+ beta); outputs y and, with output_sum, s.",
        min_inputs=1,
        max_inputs=2,
        fields=(
            Field("norm", "string", required=True, choices=NORMS),
            Field("epsilon", "float", default=1e-5, doc="> 0"),
            Field("gamma", "weights", required=True, doc="length == hidden (last dim)"),
            Field("beta", "weights"),
            Field("bias", "weights", doc="added to the sum before normalization"),
            Field("output_sum", "int", default=0, doc="0 or 1: second output s"),
        ),
    ),
}


def spec(name: str) -> OpSpec:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown plugin {name!r}; known: {sorted(OPS)}") from None
