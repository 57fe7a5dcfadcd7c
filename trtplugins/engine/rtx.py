"""TensorRT-RTX engines that contain this suite's plugins.

TensorRT-RTX's ONNX parser imports only IPluginV3 plugins (IPluginCreatorV3One):
the plugin nodes must carry `plugin_version` = ops.V3_VERSION ("2") (substitute
with plugin_api="v3"). The build runs on a machine without a GPU too (TensorRT-RTX
compiles kernels when the engine is deserialized).

A model with plugin nodes is built in a child process: TensorRT-RTX's ONNX parser
dlopens the unversioned `libtensorrt_rtx.so` when it imports a plugin node, which
the PyPI wheels (tensorrt-rtx-cu13-libs 1.7) do not ship ("Unable to open library:
libtensorrt_rtx.so", then std::terminate); the child gets a private directory
holding that name on LD_LIBRARY_PATH. A child also keeps the registry, which is
global state, out of the caller's process. The child (rtx_child.py) runs the same
`trtplugins.engine.engine.build` as every other backend; `trtplugins.engine` sends
RTX builds of models with plugin nodes here by itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from .. import loader, paths
from ..graph import io as graph_io
from .errors import BuildError
from .report import BuildResult

CHILD_ENV = "TRTPLUGINS_RTX_CHILD"


class RtxBuildError(BuildError):
    """TensorRT-RTX is missing, or refused to parse or build the model (its reason included)."""


def rtx_module():
    """The TensorRT-RTX Python module (tensorrt_rtx, or tensorrt_rtx_bindings of the split wheels)."""
    try:
        return loader.import_trt(("rtx",), need="Builder")[0]
    except loader.PluginLibraryError as e:
        raise RtxBuildError(f"TensorRT-RTX Python module not installed: {e}") from None


def in_build_process() -> bool:
    """True in the child process that build_result starts."""
    return CHILD_ENV in os.environ


def _plugin_library(library: str | os.PathLike | None) -> Path:
    if library is not None:
        return Path(library)
    tried = []
    for major in (loader.RTX_PLUGIN_MAJOR, 10):  # IPluginV3 is the same in both header sets
        try:
            return loader.library_path(major)
        except loader.PluginLibraryError as e:
            tried.append(str(e))
    raise RtxBuildError("no plugin library built: " + " | ".join(tried))


def build_result(model, *, library: str | os.PathLike | None = None, shapes: dict[str, tuple] | None = None,
                 timeout: float | None = None, log=print, **build_kw):
    """trtplugins.engine.build(model, **build_kw) on TensorRT-RTX, in a child process that has
    `library` (default: the built plugin library) loaded. model: a path or an onnx.ModelProto.
    Returns the BuildResult (plan included). The child's log lines go to `log` as they come, its
    TensorRT messages and build progress to stderr when build_kw["progress"] (default True).
    timeout: seconds (None: no limit); a build that takes longer is stopped (RtxBuildError)."""
    trt = rtx_module()
    with tempfile.TemporaryDirectory(prefix="trtplugins-rtx-") as tmp:
        if not isinstance(model, (str, os.PathLike)):
            path = graph_io.model_file(model)  # a large model: saved where its external data resolves
            if path is None:
                path = Path(tmp) / "model.onnx"
                graph_io.save_model(model, path)
            model = path
        try:
            runtime = loader.rtx_runtime_library(trt)
        except loader.PluginLibraryError as e:
            raise RtxBuildError(str(e)) from None
        (Path(tmp) / "libtensorrt_rtx.so").symlink_to(runtime)
        out = Path(tmp)
        job = dict(model=str(Path(model).resolve()), library=str(_plugin_library(library).resolve()),
                   plan=str(out / "model.plan"), summary=str(out / "summary.json"), error=str(out / "error.txt"),
                   shapes={n: [list(s) for s in v] for n, v in (shapes or {}).items()}, build=build_kw)
        env = dict(os.environ, **{CHILD_ENV: json.dumps(job)})
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (tmp, env.get("LD_LIBRARY_PATH", "")) if p)
        root = str(Path(__file__).resolve().parents[2])  # this package, not whatever the caller's folder holds
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        stderr = _run_child(env, tmp, timeout, log, show=build_kw.get("progress", True))
        summary, error = Path(job["summary"]), Path(job["error"])
        if error.is_file():
            raise RtxBuildError(error.read_text())
        if not summary.is_file():
            raise RtxBuildError(_reason(stderr))
        return BuildResult.from_dict(json.loads(summary.read_text()), Path(job["plan"]).read_bytes())


def _run_child(env: dict, cwd: str, timeout: float | None, log, show: bool) -> list[str]:
    """Run rtx_child with its stdout lines to `log` and its stderr lines to stderr (when `show`) as
    they come; returns the stderr lines. Stopped after `timeout` s (RtxBuildError) or on Ctrl-C."""
    proc = subprocess.Popen([sys.executable, "-u", "-m", "trtplugins.engine.rtx_child"], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace")
    stderr: list[str] = []

    def pump() -> None:
        for line in proc.stderr:
            stderr.append(line.rstrip("\n"))
            if show:
                print(line, end="", file=sys.stderr, flush=True)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    expired = threading.Event()

    def stop() -> None:
        expired.set()
        proc.kill()

    timer = threading.Timer(timeout, stop) if timeout is not None else None
    if timer is not None:
        timer.start()
    try:
        for line in proc.stdout:
            log(line.rstrip("\n"))
        proc.wait()
        reader.join()
    except BaseException:  # Ctrl-C, or `log` raised: the child goes too
        proc.kill()
        proc.wait()
        raise
    finally:
        if timer is not None:
            timer.cancel()
    if expired.is_set():
        raise RtxBuildError(f"TensorRT-RTX build stopped after {timeout:g} s (timeout)")
    return stderr


def build_engine(model, output: str | os.PathLike | None = None, *, shapes: dict[str, tuple] | None = None,
                 library: str | os.PathLike | None = None, timeout: float | None = None) -> dict[str, Any]:
    """Parse `model` (a path or an onnx.ModelProto) with TensorRT-RTX's ONNX parser with this
    suite's plugin library loaded, build a serialized engine and save it to `output` (if given).

    shapes: input name -> (min, opt, max) shapes for its profile; dynamic dims not given there
    get trtplugins.engine's defaults (dim 0: 1/4/16, others 1/128/512). Returns the build
    summary (BuildResult.to_dict(): "backend", "size", "layers" {layer type: count},
    "plugin_layers" [names], "io" with each input's profile). Raises RtxBuildError with
    TensorRT-RTX's own messages; timeout: seconds (None: no limit).
    """
    res = build_result(model, library=library, shapes=shapes, timeout=timeout, log=lambda *_: None, progress=False)
    if output is not None:
        paths.write_file(output, res.plan)
        res.path = str(output)
    return res.to_dict()


def _reason(stderr: list[str]) -> str:
    lines = [ln for ln in stderr if ln.strip()]
    errors = [ln for ln in lines if "[E]" in ln or "error" in ln.lower() or "terminate" in ln]
    return "; ".join((errors or lines)[-6:]) or "TensorRT-RTX build process ended without a result"
