"""Which TensorRT builds: full TensorRT 10.x / 11.x or TensorRT-RTX, and its logger and progress monitor."""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass
from typing import Any

from .. import loader, ops
from .errors import BuildError

INSTALL_HINT = {
    "tensorrt": "install TensorRT 10/11 with its Python bindings (module tensorrt; pip install 'trtplugins[trt]')",
    "rtx": "pip install tensorrt-rtx-cu13-libs==1.7.1.116 tensorrt-rtx-cu13-bindings==1.7.1.116",
}


@dataclass
class Backend:
    trt: Any  # the imported module
    kind: str  # "tensorrt" | "rtx"
    why: str = ""  # how it was chosen (printed by the CLIs)

    @property
    def version(self) -> str:
        return self.trt.__version__

    @property
    def major(self) -> int:
        """The plugin ABI major (TensorRT-RTX: 11)."""
        return loader.trt_major(self.trt)

    @property
    def rtx(self) -> bool:
        return self.kind == "rtx"

    @property
    def strongly_typed(self) -> bool:
        """TensorRT 11 and TensorRT-RTX networks are always strongly typed (no FP16 builder flag)."""
        return self.rtx or self.major >= 11

    @property
    def label(self) -> str:
        return f"{'TensorRT-RTX' if self.rtx else 'TensorRT'} {self.version}"


def backend(kind: str = "auto") -> Backend:
    """Import a TensorRT module that can build: "tensorrt", "rtx" or "auto" (tensorrt first)."""
    kinds = ("tensorrt", "rtx") if kind == "auto" else (kind,)
    if any(k not in INSTALL_HINT for k in kinds):
        raise BuildError(f"unknown backend {kind!r}; expected auto, tensorrt or rtx")
    try:
        mod, found = loader.import_trt(kinds, need="Builder")
    except loader.PluginLibraryError:
        names = " / ".join(n for k in kinds for n in loader.MODULES[k])
        hint = "; or ".join(INSTALL_HINT[k] for k in kinds)
        raise BuildError(f"no TensorRT builder found ({names} not importable; the lean runtime cannot build): "
                         f"{hint}") from None
    if kind != "auto":
        why = f"--backend {kind}"
    elif found == "rtx":
        why = "auto: full TensorRT (module tensorrt) is not installed, so TensorRT-RTX builds"
    else:
        why = "auto: full TensorRT found"
    return Backend(mod, found, why)


#: the parser's warning for a creator field a plugin node leaves out; for an optional field (the
#: creator's default applies) it is noise, shown with verbose only
MISSING_FIELD = re.compile(r"Attribute (\w+) not found in plugin node")
OPTIONAL_FIELDS = {f.name for op in ops.OPS for f in ops.spec(op).fields if not f.required}


class _Logger:
    """TensorRT logger: prints warnings (or everything with verbose), keeps errors for our messages."""

    def __new__(cls, trt, verbose=False):
        class Logger(trt.ILogger):
            def __init__(self):
                trt.ILogger.__init__(self)
                self.errors: list[str] = []
                self.quiet = False  # errors we report ourselves are not echoed

            def log(self, severity, msg):
                S = trt.ILogger.Severity
                if severity in (S.ERROR, S.INTERNAL_ERROR):
                    self.errors.append(msg)
                    if verbose or not self.quiet:
                        print(f"[TensorRT] error: {msg}", file=sys.stderr)
                elif verbose or severity == S.WARNING:
                    field = MISSING_FIELD.search(msg)
                    if not verbose and field and field.group(1) in OPTIONAL_FIELDS:
                        return
                    print(f"[TensorRT] {str(severity).split('.')[-1].lower()}: {msg}", file=sys.stderr)

        return Logger()


def progress_monitor(trt, out=None, depth: int = 1):
    """IProgressMonitor printing phases up to `depth` levels deep, with their time."""
    if not hasattr(trt, "IProgressMonitor"):
        return None
    out = out or sys.stderr

    class Progress(trt.IProgressMonitor):
        def __init__(self):
            trt.IProgressMonitor.__init__(self)
            self.level: dict[str, int] = {}
            self.start: dict[str, float] = {}

        def phase_start(self, phase_name, parent_phase, num_steps):
            lvl = 0 if parent_phase is None else self.level.get(parent_phase, 0) + 1
            self.level[phase_name], self.start[phase_name] = lvl, time.perf_counter()
            if lvl < depth:
                print(f"[build] {'  ' * lvl}{phase_name} ({num_steps} steps)", file=out, flush=True)

        def step_complete(self, phase_name, step):
            return True  # False would cancel the build

        def phase_finish(self, phase_name):
            lvl = self.level.pop(phase_name, 0)
            if lvl < depth:
                dt = time.perf_counter() - self.start.pop(phase_name, time.perf_counter())
                print(f"[build] {'  ' * lvl}{phase_name} done in {dt:.2f} s", file=out, flush=True)

    return Progress()
