"""The pattern registry: one module per fused form, one line here per pattern.

Order matters only where forms nest: larger forms first (GroupNorm, whose decomposed form holds
a LayerNorm over the grouped view, and whose SiLU it folds, before LayerNorm; LayerNorm before RMSNorm,
whose square would match inside it; the gated units before their activations; HardSwish before its
inner ReLU6; QuickGELU before SiLU)."""

from __future__ import annotations

from ... import ops
from .base import ActivationPattern, Match, NormPattern, Pattern
from .gated import GegluErf, GegluOp, GegluTanh, Reglu, Swiglu
from .gelu import GeluErf, GeluOp, GeluTanh
from .group_norm import GroupNormDecomposed, GroupNormInstance, GroupNormOp
from .hard_swish import HardSwish
from .layer_norm import LayerNorm, LayerNormOp
from .relu import Relu, Relu6
from .rms_norm import RmsNorm
from .sigmoid import QuickGelu, Silu

PATTERNS: tuple[Pattern, ...] = (
    GroupNormOp(),
    GroupNormInstance(),
    GroupNormDecomposed(),
    LayerNormOp(),
    LayerNorm(),
    RmsNorm(),
    Swiglu(),
    GegluErf(),
    GegluTanh(),
    GegluOp(),
    Reglu(),
    GeluErf(),
    GeluTanh(),
    GeluOp(),
    HardSwish(),
    QuickGelu(),
    Silu(),
    Relu6(),
    Relu(),
)

BY_NAME = {p.name: p for p in PATTERNS}
assert len(BY_NAME) == len(PATTERNS) and all(p.plugin in ops.OPS for p in PATTERNS)


def select(names: list[str] | None) -> list[tuple[Pattern, bool]]:
    """Patterns to run, in registry order, each with forced=True when asked for by name.

    names: None (default policy), or pattern names, plugin names (all their
    patterns), "default" (every pattern under the default policy), "all" (every
    pattern, forced)."""
    if names is None:
        return [(p, False) for p in PATTERNS]
    chosen: dict[str, bool] = {}
    for name in names:
        if name == "default":
            group, forced = PATTERNS, False
        elif name == "all":
            group, forced = PATTERNS, True
        elif name in ops.OPS:
            group, forced = [p for p in PATTERNS if p.plugin == name], True
        elif name in BY_NAME:
            group, forced = [BY_NAME[name]], True
        else:
            known = ", ".join(["default", "all", *ops.OPS, *BY_NAME])
            raise ValueError(f"unknown pattern or plugin {name!r}; known: {known}")
        for p in group:
            chosen[p.name] = chosen.get(p.name, False) or forced
    return [(p, chosen[p.name]) for p in PATTERNS if p.name in chosen]


__all__ = ["PATTERNS", "BY_NAME", "ActivationPattern", "Match", "NormPattern", "Pattern", "select"]
