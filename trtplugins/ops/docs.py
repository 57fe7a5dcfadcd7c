"""docs/ops.md, generated: each op's inputs, outputs and fields from schema.json (the declarations),
its patterns and the subgraphs they replace from its module. `python -m trtplugins.ops --docs`
writes it; tests/test_schema.py checks it is current."""

from __future__ import annotations

import textwrap
from pathlib import Path

from . import OPS, V2_VERSION, V3_VERSION, OpSpec, Tensor
from .registry import MODULES

PATH = Path(__file__).resolve().parents[2] / "docs" / "ops.md"


def _tensors(ts: tuple[Tensor, ...]) -> str:
    rows = []
    for t in ts:
        when = " (optional)" if t.optional else f" (when `{t.when}` = 1)" if t.when else ""
        rows.append(f"- `{t.name}`{when}: {t.doc}")
    return "\n".join(rows)


def _fields(spec: OpSpec) -> str:
    rows = ["| field | kind | required | default | values | meaning |", "| --- | --- | --- | --- | --- | --- |"]
    for f in spec.fields:
        values = ", ".join(f"`{c}` ({i})" for c, i in zip(f.choices, f.ids))
        default = "" if f.default is None else f"`{f.default}`"
        rows.append(f"| `{f.name}` | {f.kind} | {'yes' if f.required else 'no'} | {default} | {values} | {f.doc} |")
    return "\n".join(rows)


def _op(name: str) -> str:
    spec, mod = OPS[name], MODULES[name]
    folder = mod.__name__.rsplit(".", 1)[1]
    patterns = ", ".join(f"`{p.name}`" for p in mod.PATTERNS) or f"none: {mod.NO_PATTERN}"
    body = mod.__doc__.split("\n\n", 1)[1].strip() if "\n\n" in mod.__doc__ else ""
    return "\n\n".join([
        f"## {name}", spec.doc,
        f"Declared in `plugin_src/ops/{folder}/{folder}_op.cpp`;\nits Python side: `trtplugins/ops/{folder}.py`.",
        "Inputs:\n" + _tensors(spec.inputs), "Outputs:\n" + _tensors(spec.outputs), _fields(spec),
        f"Patterns: {patterns}.", body,
    ]).rstrip() + "\n"


def render() -> str:
    head = textwrap.fill(f"Generated from `trtplugins/schema.json` (the C++ declarations) and the op modules by "
            f"`python -m trtplugins.ops --docs`; do not edit. Each op is a plugin of version \"{V2_VERSION}\" "
            f"(IPluginV2DynamicExt) and \"{V3_VERSION}\" (IPluginV3), namespace \"\"; every input and output has "
            f"input 0's type, FP32, FP16 or BF16. Weights fields take FP32, FP16 or BF16 arrays.", width=100)
    return "# The ops\n\n" + head + "\n" + "".join("\n" + _op(name) for name in OPS)
