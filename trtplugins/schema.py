"""The op schemas, derived from the C++ op declarations (plugin_src/ops/<op>/); `trtplugins.ops`
hands them on, beside one module per op (its reference, patterns and kernel binding).

`schema.json` (trtplugins/schema.json) is generated from the declarations
(the kernel library's trtp_schema; tests check that it is up to date, and
`python -m trtplugins.ops --write` regenerates it from the built library). Nothing here is written by hand: fields, kinds, defaults,
enum names and their kernel ids, inputs, outputs and plugin versions.
The graph tools write ONNX plugin nodes from this spec, and `create_plugin`
types Python values with it. This module imports nothing heavy: the loader and
the lean-runtime tools read it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).resolve().parent / "schema.json"
_SCHEMA = json.loads(SCHEMA_PATH.read_text())

#: ONNX domain of plugin nodes written by the graph tools. TensorRT's parser
#: ignores node.domain; it only keeps the nodes apart from standard ONNX ops.
DOMAIN = "trtplugins"
#: Plugin versions: the same ops under two TensorRT plugin interfaces in one library.
V2_VERSION = _SCHEMA["versions"]["v2"]  # IPluginV2DynamicExt + IPluginCreator (deprecated by TensorRT)
V3_VERSION = _SCHEMA["versions"]["v3"]  # IPluginV3 + IPluginCreatorV3One (TensorRT-RTX imports only these)
VERSIONS = {"v2": V2_VERSION, "v3": V3_VERSION}
#: the plugin API the graph tools write unless told otherwise (build_engine.py picks per backend)
DEFAULT_API = "v3"  # what substitution writes: TensorRT 10+ and TensorRT-RTX take IPluginV3
VERSION = V2_VERSION  # a node without plugin_version means "1" to the ONNX parser; create_plugin's default
NAMESPACE = _SCHEMA["namespace"]


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
    ids: tuple[int, ...] = ()  # the kernel's enum id of each choice
    doc: str = ""


@dataclass(frozen=True)
class Tensor:
    name: str
    optional: bool = False
    when: str | None = None  # outputs: present when this int field is 1
    doc: str = ""


@dataclass(frozen=True)
class OpSpec:
    name: str  # plugin name == ONNX op_type
    fields: tuple[Field, ...]
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    doc: str = ""
    version: str = VERSION
    #: I/O tensor types the plugin takes (supportsFormatCombination); the graph tools
    #: write no plugin node on any other type
    types: tuple[str, ...] = ("float32", "float16", "bfloat16")

    @property
    def min_inputs(self) -> int:
        return sum(not t.optional for t in self.inputs)

    @property
    def max_inputs(self) -> int:
        return len(self.inputs)

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no field {name!r}; fields: {[f.name for f in self.fields]}")

    def enum_ids(self, field: str) -> dict[str, int]:
        f = self.field(field)
        return dict(zip(f.choices, f.ids))

    def num_outputs(self, attrs: dict[str, Any]) -> int:
        return sum(1 for t in self.outputs if t.when is None or int(attrs.get(t.when) or 0))


def _op(d: dict) -> OpSpec:
    fields = tuple(
        Field(f["name"], f["kind"], f["required"], f.get("default"), tuple(f.get("choices", {})),
              tuple(f.get("choices", {}).values()), f["doc"])
        for f in d["fields"]
    )
    tensors = lambda ts: tuple(Tensor(t["name"], t["optional"], t.get("when"), t["doc"]) for t in ts)  # noqa: E731
    return OpSpec(d["name"], fields, tensors(d["inputs"]), tensors(d["outputs"]), d["doc"])


OPS: dict[str, OpSpec] = {d["name"]: _op(d) for d in _SCHEMA["ops"]}

BIAS_ACTIVATION = "BiasActivation"
GATED_ACTIVATION = "GatedActivation"
SKIP_NORM = "SkipNorm"
GROUP_NORM = "GroupNorm"
LEGACY_GELU = "CustomGeluPluginDynamic"  # TensorRT OSS's, removed in 11.0: models that name it build unchanged
ACTIVATIONS = OPS[BIAS_ACTIVATION].field("activation").choices
GATED_ACTIVATIONS = OPS[GATED_ACTIVATION].field("activation").choices
NORMS = OPS[SKIP_NORM].field("norm").choices
GROUP_NORM_ACTIVATIONS = OPS[GROUP_NORM].field("activation").choices


def spec(name: str) -> OpSpec:
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown plugin {name!r}; known: {sorted(OPS)}") from None


__all__ = [
    "SCHEMA_PATH",
    "DOMAIN",
    "V2_VERSION",
    "V3_VERSION",
    "VERSIONS",
    "DEFAULT_API",
    "VERSION",
    "NAMESPACE",
    "OPS",
    "BIAS_ACTIVATION",
    "GATED_ACTIVATION",
    "SKIP_NORM",
    "GROUP_NORM",
    "LEGACY_GELU",
    "ACTIVATIONS",
    "GATED_ACTIVATIONS",
    "NORMS",
    "GROUP_NORM_ACTIVATIONS",
    "Field",
    "Tensor",
    "OpSpec",
    "spec",
]
