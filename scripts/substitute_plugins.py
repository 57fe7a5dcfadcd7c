#!/usr/bin/env python3
"""Replace fusable subgraphs of an ONNX model with trtplugins plugin nodes.

  python scripts/substitute_plugins.py in.onnx -o out.onnx [--ops ...] [--dry-run] [--report FILE.json] [--fp16]
                                       [--plugin-api {v2,v3}]

Prints per pattern how many matches were replaced and how many nodes removed, and what
was left and why. --fp16 also converts the result to FP16 (FP32 I/O kept): the way to
get FP16 engines on TensorRT 11, whose networks are strongly typed. The input file is
never modified."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clean clone

from trtplugins import ops as plugin_ops  # noqa: E402
from trtplugins.graph import GraphError, convert_fp16, load_model, substitute  # noqa: E402
from trtplugins.graph.io import in_workspace, save_model  # noqa: E402
from trtplugins.paths import PathError, distinct, output_file  # noqa: E402
from trtplugins.ops.registry import BY_NAME  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", type=Path, help="input .onnx (never modified)")
    ap.add_argument("-o", "--output", type=Path, help="output .onnx (required unless --dry-run)")
    ap.add_argument("--ops", nargs="+", metavar="NAME",
                    help=f"patterns to force ({', '.join(BY_NAME)}), plugin names, 'default' or 'all'; default: the default policy")
    ap.add_argument("--dry-run", action="store_true", help="match and report only, write no model")
    ap.add_argument("--report", type=Path, help="write the report as JSON")
    ap.add_argument("--fp16", action="store_true", help="convert the result to FP16 (FP32 I/O kept)")
    ap.add_argument("--plugin-api", choices=sorted(plugin_ops.VERSIONS), default=plugin_ops.DEFAULT_API,
                    help=f"plugin nodes for IPluginV2 (plugin_version {plugin_ops.V2_VERSION!r}, TensorRT 10/11) or "
                         f"IPluginV3 (plugin_version {plugin_ops.V3_VERSION!r}, TensorRT 10/11 and TensorRT-RTX); "
                         f"default {plugin_ops.DEFAULT_API}")
    args = ap.parse_args(argv)
    if not args.dry_run and args.output is None:
        ap.error("-o/--output is required unless --dry-run")
    try:
        outputs = {"-o/--output": None if args.dry_run else args.output, "--report": args.report}
        for flag, path in outputs.items():
            if path is not None:
                output_file(path, flag, inputs=[args.model])
        distinct(outputs)
        model = load_model(args.model)
        with in_workspace(model):
            out, report = substitute(model, args.ops, args.plugin_api)
            if args.fp16:
                out = convert_fp16(out)
    except (GraphError, PathError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(report)
    if args.report:
        args.report.write_text(report.json())
    if not args.dry_run:
        save_model(out, args.output)
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
