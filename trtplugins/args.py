"""Command-line arguments the tools share: the model and --ops."""

from __future__ import annotations

import argparse

OPS_HELP = ("patterns or plugins to substitute beyond the default policy, in any case: a pattern name, a plugin "
            "name (every pattern of it, e.g. GatedActivation), 'default' (the default policy) or 'all'; "
            "e.g. --ops default GatedActivation")


def add_model_and_ops(ap: argparse.ArgumentParser, model_help: str) -> None:
    """A positional model and --ops NAME...; parse with parse() so `--ops all model.onnx` works."""
    ap.add_argument("model", nargs="?", help=model_help)
    ap.add_argument("--ops", nargs="+", metavar="NAME", help=OPS_HELP)


def parse(ap: argparse.ArgumentParser, argv=None) -> argparse.Namespace:
    """parse_args, then: --ops takes every word after it, so a last word that names no pattern or
    plugin is the model (`--ops all model.onnx`); op names in their canonical case. An unknown
    one is a ValueError naming the nearest (the tools print it as their one-line error)."""
    from .ops.registry import canonical_name, selection_names

    a = ap.parse_args(argv)
    known = {n.lower() for n in selection_names()}
    if a.model is None and a.ops and a.ops[-1].lower() not in known:
        a.model = a.ops.pop()
    if a.model is None:
        ap.error("the following arguments are required: model")
    if a.ops == []:
        ap.error("--ops: expected at least one pattern or plugin name before the model")
    try:
        a.ops = [canonical_name(n) for n in a.ops] if a.ops else None
    except ValueError as e:
        raise ValueError(f"--ops: {e}") from None
    return a
