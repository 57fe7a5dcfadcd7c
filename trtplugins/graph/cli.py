"""`trtplugins substitute` (scripts/substitute_plugins.py): replace fusable subgraphs of an ONNX model
with trtplugins plugin nodes.

Prints per pattern how many matches were replaced and how many nodes removed, and what was left
and why. --fp16 also converts the result to FP16 (FP32 I/O kept): the way to get FP16 engines on
TensorRT 11, whose networks are strongly typed. The input file is never modified; outputs are
written beside their target and renamed, the model first."""

from __future__ import annotations

import argparse
import sys

from .. import args as arguments
from .. import ops as plugin_ops
from ..paths import PathError, distinct, output_file, write_file
from . import GraphError, convert_fp16, load_model, substitute
from .io import in_workspace, save_model


def main(argv: list[str] | None = None, prog: str = "trtplugins substitute") -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0].split(": ", 1)[1])
    arguments.add_model_and_ops(ap, "input .onnx (never modified)")
    ap.add_argument("-o", "--output", help="output .onnx (required unless --dry-run)")
    ap.add_argument("--dry-run", action="store_true", help="match and report only, write no model")
    ap.add_argument("--report", help="write the report as JSON")
    ap.add_argument("--fp16", action="store_true", help="convert the result to FP16 (FP32 I/O kept)")
    ap.add_argument("--plugin-api", choices=sorted(plugin_ops.VERSIONS), default=plugin_ops.DEFAULT_API,
                    help=f"plugin nodes for IPluginV2 (plugin_version {plugin_ops.V2_VERSION!r}, TensorRT 10/11) or "
                         f"IPluginV3 (plugin_version {plugin_ops.V3_VERSION!r}, TensorRT 10/11 and TensorRT-RTX); "
                         f"default {plugin_ops.DEFAULT_API}")
    try:
        a = arguments.parse(ap, argv)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not a.dry_run and a.output is None:
        ap.error("-o/--output is required unless --dry-run")
    try:
        outputs = {"-o/--output": None if a.dry_run else a.output, "--report": a.report}
        for flag, path in outputs.items():
            if path is not None:
                output_file(path, flag, inputs=[a.model])
        distinct(outputs)
        model = load_model(a.model)
        with in_workspace(model):
            out, report = substitute(model, a.ops, a.plugin_api)
            if a.fp16:
                out = convert_fp16(out)
        print(report)
        if not a.dry_run:
            save_model(out, a.output, "-o/--output")
            print(f"wrote {a.output}")
        if a.report:
            write_file(a.report, report.json(), "--report")
            print(f"report: {a.report}")
    except (GraphError, PathError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0
