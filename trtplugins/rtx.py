"""TensorRT-RTX engines that contain this suite's plugins.

TensorRT-RTX's ONNX parser imports only IPluginV3 plugins (IPluginCreatorV3One):
the plugin nodes must carry `plugin_version` = ops.V3_VERSION ("2"). The build
runs on a machine without a GPU too (TensorRT-RTX compiles kernels when the
engine is deserialized).

`build_engine` runs TensorRT-RTX in a child process: its ONNX parser dlopens the
unversioned `libtensorrt_rtx.so` when it imports a plugin node, which the PyPI
wheels (tensorrt-rtx-cu13-libs 1.7) do not ship ("Unable to open library:
libtensorrt_rtx.so", then std::terminate); the child gets a private directory
holding that name on LD_LIBRARY_PATH. A child also keeps the registry, which is
global state, out of the caller's process.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from . import ops

_MODULES = ("tensorrt_rtx", "tensorrt_rtx_bindings")
_CHILD = "TRTPLUGINS_RTX_CHILD"


class RtxBuildError(RuntimeError):
    """TensorRT-RTX is missing, or refused to parse or build the model (its reason included)."""


def rtx_module():
    errors = []
    for name in _MODULES:
        try:
            return importlib.import_module(name)
        except ImportError as e:
            errors.append(f"{name}: {e}")
    raise RtxBuildError("TensorRT-RTX Python module not installed (" + "; ".join(errors) + ")")


def _runtime_library() -> Path:
    """libtensorrt_rtx.so.<N> of the installed TensorRT-RTX."""
    trt = rtx_module()
    candidates = []
    for pkg in ("tensorrt_rtx_libs",):
        try:
            candidates.append(Path(importlib.import_module(pkg).__file__).parent)
        except ImportError:
            pass
    candidates.append(Path(trt.__file__).parent)
    for d in candidates:
        found = sorted(d.glob("libtensorrt_rtx.so.*"))
        if found:
            return found[0]
    raise RtxBuildError(f"libtensorrt_rtx.so.* not found in {', '.join(map(str, candidates))}")


def _plugin_library(library: str | os.PathLike | None) -> Path:
    if library is not None:
        return Path(library)
    from ._lib import PluginLibraryError, library_path

    tried = []
    for major in (11, 10):  # IPluginV3 is the same in both header sets
        try:
            return library_path(major)
        except PluginLibraryError as e:
            tried.append(str(e))
    raise RtxBuildError("no plugin library built: " + " | ".join(tried))


def build_engine(model, output: str | os.PathLike | None = None, *, shapes: dict[str, tuple] | None = None,
                 library: str | os.PathLike | None = None, timeout: float = 600) -> dict[str, Any]:
    """Parse `model` (a path or an onnx.ModelProto) with TensorRT-RTX's ONNX parser with this
    suite's plugin library loaded, build a serialized engine and save it to `output` (if given).

    shapes: input name -> (min, opt, max) shapes for its profile; dynamic dims not given there
    are 1 / 4 / 16. Returns {"backend", "size", "layers": {layer type: count},
    "plugin_layers": [names], "inputs": {name: [min, opt, max]}}. Raises RtxBuildError with
    TensorRT-RTX's own messages.
    """
    with tempfile.TemporaryDirectory(prefix="trtplugins-rtx-") as tmp:
        if not isinstance(model, (str, os.PathLike)):
            import onnx

            path = Path(tmp) / "model.onnx"
            onnx.save(model, path)
            model = path
        runtime = _runtime_library()
        (Path(tmp) / "libtensorrt_rtx.so").symlink_to(runtime)
        job = dict(model=str(model), output=None if output is None else str(output), shapes=shapes or {},
                   library=str(_plugin_library(library)), summary=str(Path(tmp) / "summary.json"))
        env = dict(os.environ, **{_CHILD: json.dumps(job)})
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (tmp, env.get("LD_LIBRARY_PATH", "")) if p)
        root = str(Path(__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        r = subprocess.run([sys.executable, "-m", "trtplugins.rtx"], env=env, capture_output=True, text=True, timeout=timeout)
        summary = Path(job["summary"])
        if r.returncode != 0 or not summary.is_file():
            raise RtxBuildError(_reason(r))
        return json.loads(summary.read_text())


def _reason(r: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
    errors = [ln for ln in lines if "RtxBuildError" in ln or "[E]" in ln or "error" in ln.lower()]
    return "; ".join((errors or lines)[-6:]) or f"TensorRT-RTX child exited with {r.returncode}"


def _child(job: dict) -> None:
    trt = rtx_module()
    logger = trt.Logger(trt.Logger.WARNING)
    registry = trt.get_plugin_registry()
    if registry.load_library(job["library"]) is None:
        raise RtxBuildError(f"TensorRT-RTX refused {job['library']}")
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(job["model"]):
        errs = [parser.get_error(i) for i in range(parser.num_errors)]
        raise RtxBuildError("parse failed: " + "; ".join(f"node {e.node_name()!r} ({e.node_operator()}): {e.desc()}" for e in errs))
    config = builder.create_builder_config()
    profile = builder.create_optimization_profile()
    inputs = {}
    for i in range(network.num_inputs):
        t = network.get_input(i)
        dims = tuple(t.shape)
        given = job["shapes"].get(t.name)
        if given:
            mn, opt, mx = (tuple(s) for s in given)
        else:
            mn, opt, mx = (tuple(v if d < 0 else d for d in dims) for v in (1, 4, 16))
        profile.set_shape(t.name, mn, opt, mx)
        inputs[t.name] = [list(mn), list(opt), list(mx)]
    config.add_optimization_profile(profile)
    layers: dict[str, int] = {}
    plugin_layers = []
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        kind = str(layer.type).split(".")[-1]
        layers[kind] = layers.get(kind, 0) + 1
        if kind.startswith("PLUGIN"):
            plugin_layers.append(layer.name)
    plan = builder.build_serialized_network(network, config)
    if plan is None:
        raise RtxBuildError("TensorRT-RTX built no engine (its errors are above)")
    data = bytes(plan)
    if job["output"]:
        Path(job["output"]).write_bytes(data)
    summary = dict(backend=f"TensorRT-RTX {trt.__version__}", size=len(data), layers=layers,
                   plugin_layers=plugin_layers, inputs=inputs, plugin_version=ops.V3_VERSION)
    Path(job["summary"]).write_text(json.dumps(summary))


if __name__ == "__main__":
    if _CHILD not in os.environ:
        sys.exit("trtplugins.rtx runs as build_engine's child process only")
    try:
        _child(json.loads(os.environ[_CHILD]))
    except RtxBuildError as e:
        print(f"RtxBuildError: {e}", file=sys.stderr)
        sys.exit(2)
