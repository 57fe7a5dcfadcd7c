"""THE list of ops on the Python side, and what derives from it: each op's module (reference,
patterns, kernel binding) by plugin name, every pattern in match order, and the evaluation of a
plugin node by its op's reference.

Order matters only where patterns nest: larger forms first (GroupNorm, whose decomposed form holds
a LayerNorm over the grouped view, and whose SiLU it folds, before SkipNorm's LayerNorm; the gated
units before their activations). Inside a module its PATTERNS say their own order (LayerNorm before
RMSNorm, whose square would match inside it; HardSwish before its inner ReLU6; QuickGELU before SiLU).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Sequence

import numpy as np

from .. import ops
from ..fusion.pattern import Pattern
from . import bias_activation, gated_activation, group_norm, legacy_gelu, skip_norm

#: one line per op
MODULES: dict[str, ModuleType] = {
    ops.GROUP_NORM: group_norm,
    ops.SKIP_NORM: skip_norm,
    ops.GATED_ACTIVATION: gated_activation,
    ops.BIAS_ACTIVATION: bias_activation,
    ops.LEGACY_GELU: legacy_gelu,
}

PATTERNS = tuple(p for m in MODULES.values() for p in m.PATTERNS)
BY_NAME = {p.name: p for p in PATTERNS}
assert len(BY_NAME) == len(PATTERNS) and all(p.plugin in ops.OPS for p in PATTERNS)


def module(op_type: str) -> ModuleType:
    """The module of a plugin name; KeyError naming the known ones."""
    try:
        return MODULES[op_type]
    except KeyError:
        raise KeyError(f"unknown plugin {op_type!r}; known: {sorted(MODULES)}") from None


def run_reference(op_type: str, inputs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    """Evaluate a plugin node: its op_type, its data inputs and its attributes (creator field names;
    weights as arrays). Returns the list of outputs."""
    spec = ops.spec(op_type)
    unknown = set(attrs) - {f.name for f in spec.fields} - {"plugin_version", "plugin_namespace"}
    if unknown:
        raise ValueError(f"{op_type}: unknown attributes {sorted(unknown)}")
    if not spec.min_inputs <= len(inputs) <= spec.max_inputs:
        raise ValueError(f"{op_type} takes {spec.min_inputs}..{spec.max_inputs} inputs, got {len(inputs)}")
    return module(op_type).node_reference(inputs, attrs)


def select(names: list[str] | None) -> list[tuple[Pattern, bool]]:
    """Patterns to run, in registry order, each with forced=True when asked for by name.

    names: None (default policy), or pattern names, plugin names (all their
    patterns), "default" (every pattern under the default policy), "all" (every
    pattern, forced); in any case. An unknown name is a ValueError that suggests the nearest."""
    if names is None:
        return [(p, False) for p in PATTERNS]
    chosen: dict[str, bool] = {}
    for name in names:
        key = canonical_name(name)
        if key == "default":
            group, forced = PATTERNS, False
        elif key == "all":
            group, forced = PATTERNS, True
        elif key in ops.OPS:
            group, forced = [p for p in PATTERNS if p.plugin == key], True
        else:
            group, forced = [BY_NAME[key]], True
        for p in group:
            chosen[p.name] = chosen.get(p.name, False) or forced
    return [(p, chosen[p.name]) for p in PATTERNS if p.name in chosen]


def selection_names() -> list[str]:
    """Every name select() takes."""
    return ["default", "all", *ops.OPS, *BY_NAME]


def canonical_name(name: str) -> str:
    """The selection name `name` spells in any case; ValueError (with the nearest names) otherwise."""
    import difflib

    by_lower = {n.lower(): n for n in selection_names()}
    if name.lower() in by_lower:
        return by_lower[name.lower()]
    near = difflib.get_close_matches(name.lower(), by_lower, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(by_lower[n] for n in near)}? " if near else ""
    raise ValueError(f"unknown pattern or plugin {name!r}; {hint}known: {', '.join(selection_names())}")
