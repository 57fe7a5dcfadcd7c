"""`trtplugins build` (scripts/build_engine.py): the command line over prepare / load_plugins / build."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .. import args as arguments
from .. import ops, paths
from .backend import backend
from .engine import build_file
from .errors import BuildError
from .plugins import check_plugins_arg
from .profiles import parse_shapes
from .report import BuildResult


def cli_args(argv=None, prog: str = "trtplugins build") -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog=prog, description="Build a TensorRT or TensorRT-RTX engine that uses the trtplugins plugins from an "
                               "ONNX model (exit 0 built, 2 user error or build failure).")
    arguments.add_model_and_ops(ap, "ONNX model (FP32)")
    ap.add_argument("-o", "--output", help="plan file (default: MODEL with .plan, .fp16.plan with --fp16)")
    ap.add_argument("--fp16", action="store_true",
                    help="FP16: builder flag on TensorRT 10, FP16-converted model on TensorRT 11 / RTX")
    ap.add_argument("--no-substitute", action="store_true", help="parse the model as it is")
    ap.add_argument("--shapes", nargs="+", default=[], metavar="NAME:MIN/OPT/MAX",
                    help="profile per input, dims joined by x, e.g. x:1x1x64/4x128x64/16x512x64")
    ap.add_argument("--no-tf32", action="store_true", help="FP32 matmuls in full FP32 (TF32 is on by default)")
    ap.add_argument("--workspace", type=int, metavar="MB", help="workspace memory pool limit")
    ap.add_argument("--timing-cache", metavar="FILE", help="read (if present) and write a timing cache")
    ap.add_argument("--plugins", metavar="LIB", help="plugin library to load instead of trtplugins.load()")
    ap.add_argument("--backend", choices=("auto", "tensorrt", "rtx"), default="auto",
                    help="auto: full TensorRT if installed, else TensorRT-RTX (the choice is printed)")
    ap.add_argument("--plugin-api", choices=sorted(ops.VERSIONS),
                    help=f"plugin nodes the substitution writes: v2 (plugin_version {ops.V2_VERSION!r}, IPluginV2) or "
                         f"v3 ({ops.V3_VERSION!r}, IPluginV3); default {ops.DEFAULT_API} (TensorRT-RTX imports only V3)")
    ap.add_argument("--save-onnx", metavar="FILE", help="also save the ONNX that was parsed (after substitution)")
    ap.add_argument("--summary-json", metavar="FILE", help="write the build summary as JSON")
    ap.add_argument("--verbose", action="store_true", help="TensorRT's whole log and the deeper build phases")
    try:
        a = arguments.parse(ap, argv)
    except ValueError as e:
        raise BuildError(str(e)) from None
    a.shapes = parse_shapes(a.shapes)
    if a.workspace is not None and a.workspace <= 0:
        raise BuildError("--workspace must be a positive number of MB")
    check_paths(a)
    return a


def check_paths(a: argparse.Namespace) -> None:
    """Every file argument, before any work: the model exists, outputs can be written and
    never replace the model (or each other)."""
    m = Path(a.model)
    if m.is_dir():
        raise BuildError(f"{m}: is a folder, not an ONNX file")
    if not m.is_file():
        raise BuildError(f"{m}: no such ONNX file")
    outputs = {"-o/--output": a.output or default_output(a.model, a.fp16), "--save-onnx": a.save_onnx,
               "--summary-json": a.summary_json, "--timing-cache": a.timing_cache}
    try:
        for flag, path in outputs.items():
            if path is not None:
                paths.output_file(path, flag, inputs=[a.model])
        paths.distinct(outputs)
    except paths.PathError as e:
        raise BuildError(str(e)) from None


def default_output(model: str, fp16: bool) -> str:
    p = Path(model)
    return str(p.with_suffix(".fp16.plan" if fp16 else ".plan"))


def run(a: argparse.Namespace, log=print) -> BuildResult:
    be = backend(a.backend)
    log(f"backend: {be.label} ({be.why})")
    check_plugins_arg(be, a.plugins)
    res, _ = build_file(a.model, be=be, substitute=not a.no_substitute, fp16=a.fp16, plugins=a.plugins,
                        save_onnx=a.save_onnx, plugin_api=a.plugin_api, patterns=a.ops, log=log, shapes=a.shapes,
                        workspace_mb=a.workspace, timing_cache=a.timing_cache, tf32=not a.no_tf32, verbose=a.verbose)
    res.path = a.output or default_output(a.model, a.fp16)
    paths.write_file(res.path, res.plan, "-o/--output")
    if a.summary_json:
        paths.write_file(a.summary_json, json.dumps(res.to_dict(), indent=2), "--summary-json")
    return res


def main(argv=None, prog: str = "trtplugins build") -> int:
    try:
        a = cli_args(argv, prog)
        res = run(a)
    except (BuildError, paths.PathError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    print(res.summary())
    return 0
