"""The TensorRT-RTX build process that rtx.build_result starts (see rtx.py for why a child)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from .. import loader
from .backend import Backend
from .engine import build
from .errors import BuildError
from .model import load_onnx
from .rtx import CHILD_ENV, RtxBuildError, in_build_process, rtx_module


def main(job: dict) -> None:
    trt = rtx_module()
    try:
        loader.load(trt.get_plugin_registry(), job["library"], mod=trt)
    except loader.PluginLibraryError as e:
        raise RtxBuildError(str(e)) from None
    be = Backend(trt, "rtx", "TensorRT-RTX build process")
    shapes = {n: tuple(tuple(s) for s in v) for n, v in job["shapes"].items()}
    res = build(load_onnx(job["model"]), be=be, shapes=shapes or None, onnx_path=job["model"], **job["build"])
    Path(job["plan"]).write_bytes(res.plan)
    Path(job["summary"]).write_text(json.dumps(res.to_dict()))


if __name__ == "__main__":
    if not in_build_process():
        sys.exit("trtplugins.engine.rtx_child runs as build_result's child process only")
    try:
        main(json.loads(os.environ[CHILD_ENV]))
    except BuildError as e:
        Path(json.loads(os.environ[CHILD_ENV])["error"]).write_text(str(e))
        sys.exit(2)
