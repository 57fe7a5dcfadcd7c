"""Build TensorRT engines from ONNX with the suite's plugins.

Backends: full TensorRT 10.x / 11.x (module `tensorrt`) and TensorRT-RTX (module
`tensorrt_rtx`, or `tensorrt_rtx_bindings` from the split PyPI wheels). The lean
runtime cannot build and is not a backend here.

Flow: load ONNX -> substitute fusable subgraphs with plugin nodes -> (FP16 on strongly
typed backends: convert the model) -> load plugins and check every plugin node has a
creator -> parse -> optimization profile -> build -> save plan -> summary. User errors
raise BuildError with a one-line message; the CLI prints it and exits 2.

  backend.py   which TensorRT builds (Backend, backend()), logger, progress monitor
  profiles.py  --shapes and optimization profiles
  model.py     load, substitute, FP16
  plugins.py   plugin library loading, creator checks
  engine.py    parse + build (build, build_file)
  report.py    BuildResult: layers, plugin layers, I/O
  cli.py       build_engine.py
  rtx.py       TensorRT-RTX builds of models with plugin nodes (a child process: rtx_child.py)
"""

from .backend import INSTALL_HINT, Backend, backend
from .cli import cli_args, default_output, main, run
from .engine import build, build_file
from .errors import BuildError
from .model import load_onnx, plugin_nodes, prepare
from .plugins import library_hint, load_plugins, missing_creators, plugin_api
from .profiles import (DEFAULT_BATCH, DEFAULT_DIM, Profile, Shape, fmt_shape, infer_profile, onnx_inputs,
                       parse_shape, parse_shapes)
from .report import BuildResult

__all__ = [
    "DEFAULT_BATCH", "DEFAULT_DIM", "INSTALL_HINT", "Backend", "BuildError", "BuildResult", "Profile", "Shape",
    "backend", "build", "build_file", "cli_args", "default_output", "fmt_shape", "infer_profile",
    "library_hint", "load_onnx", "load_plugins", "main", "missing_creators", "onnx_inputs", "parse_shape",
    "parse_shapes", "plugin_api", "plugin_nodes", "prepare", "run",
]
