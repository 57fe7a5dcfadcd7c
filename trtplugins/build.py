"""Build TensorRT engines from ONNX with the suite's plugins.

Backends: full TensorRT 10.x / 11.x (module `tensorrt`) and TensorRT-RTX
(module `tensorrt_rtx`, or `tensorrt_rtx_bindings` from the split PyPI
wheels). The lean runtime cannot build and is not a backend here.

Flow: load ONNX -> substitute fusable subgraphs with plugin nodes -> (FP16 on
strongly typed backends: convert the model) -> load plugins and check every
plugin node has a creator -> parse -> optimization profile -> build -> save
plan -> summary. User errors raise BuildError with a one-line message; the
CLI prints it and exits 2, without a traceback.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from . import ops

Shape = tuple[int, ...]
Profile = dict[str, tuple[Shape, Shape, Shape]]

#: min/opt/max used for dynamic dims the user did not give with --shapes.
DEFAULT_BATCH = (1, 4, 16)  # dim 0
DEFAULT_DIM = (1, 128, 512)  # any other dynamic dim (sequence, spatial)

_MODULES = {"tensorrt": ("tensorrt",), "rtx": ("tensorrt_rtx", "tensorrt_rtx_bindings")}
INSTALL_HINT = {
    "tensorrt": "install TensorRT 10/11 with its Python bindings (module tensorrt)",
    "rtx": "pip install tensorrt-rtx-cu13-libs==1.7.1.116 tensorrt-rtx-cu13-bindings==1.7.1.116",
}


class BuildError(Exception):
    """A user-facing failure with a one-line message."""


# ---------------------------------------------------------------- backend


@dataclass
class Backend:
    trt: Any  # the imported module
    kind: str  # "tensorrt" | "rtx"

    @property
    def version(self) -> str:
        return self.trt.__version__

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

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
    for k in kinds:
        if k not in _MODULES:
            raise BuildError(f"unknown backend {k!r}; expected auto, tensorrt or rtx")
        for name in _MODULES[k]:
            try:
                mod = __import__(name)
            except ImportError:
                continue
            if hasattr(mod, "Builder"):
                return Backend(mod, k)
    hint = "; or ".join(INSTALL_HINT[k] for k in kinds)
    raise BuildError(f"no TensorRT builder found ({' / '.join(n for k in kinds for n in _MODULES[k])} "
                     f"not importable; the lean runtime cannot build): {hint}")


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
                    print(f"[TensorRT] {str(severity).split('.')[-1].lower()}: {msg}", file=sys.stderr)

        return Logger()


def _progress_monitor(trt, out=None, depth: int = 1):
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


# ---------------------------------------------------------------- shapes


def parse_shape(text: str) -> Shape:
    try:
        dims = tuple(int(d) for d in text.lower().split("x"))
    except ValueError:
        raise BuildError(f"bad shape {text!r}: expected dims joined by x, e.g. 1x128x64") from None
    if any(d < 0 for d in dims):
        raise BuildError(f"bad shape {text!r}: negative dim")
    return dims


def parse_shapes(specs: Iterable[str]) -> Profile:
    """--shapes entries "name:min/opt/max" (or "name:shape" for a fixed shape) -> profile."""
    out: Profile = {}
    for s in specs:
        name, sep, shapes = s.rpartition(":")
        if not sep or not name:
            raise BuildError(f"bad --shapes {s!r}: expected name:min/opt/max, e.g. x:1x1x64/4x128x64/16x512x64")
        parts = [parse_shape(p) for p in shapes.split("/")]
        if len(parts) == 1:
            parts *= 3
        if len(parts) != 3:
            raise BuildError(f"bad --shapes {s!r}: give one shape or three (min/opt/max)")
        mn, opt, mx = parts
        if not len(mn) == len(opt) == len(mx):
            raise BuildError(f"--shapes {name}: min/opt/max have different ranks")
        if not all(a <= b <= c for a, b, c in zip(mn, opt, mx)):
            raise BuildError(f"--shapes {name}: need min <= opt <= max in every dim, got {shapes}")
        out[name] = (mn, opt, mx)
    return out


def onnx_inputs(model) -> list[tuple[str, list]]:
    """Graph inputs that are not initializers, dims as int (static) or str/None (dynamic)."""
    inits = {i.name for i in model.graph.initializer}
    res = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        dims = []
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(int(d.dim_value))
            else:
                dims.append(d.dim_param or None)
        res.append((vi.name, dims))
    return res


def fmt_shape(s: Sequence) -> str:
    return "x".join(str(d) for d in s) if len(s) else "scalar"


def infer_profile(inputs: Sequence[tuple[str, Sequence]], given: Profile | None = None) -> tuple[Profile, list[str]]:
    """A profile for every input: --shapes where given, static dims as they are,
    defaults for dynamic ones (dim 0: DEFAULT_BATCH, others: DEFAULT_DIM).

    inputs: (name, dims) with dims int, or None / -1 / a dim name for dynamic.
    Returns the profile and one note per defaulted input (to print).
    """
    given = dict(given or {})
    names = [n for n, _ in inputs]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise BuildError(f"--shapes names {unknown} are not model inputs; inputs: {names}")
    prof: Profile = {}
    notes = []
    for name, dims in inputs:
        dyn = lambda d: not isinstance(d, int) or d < 0  # noqa: E731
        if name in given:
            mn, opt, mx = given.pop(name)
            if len(mn) != len(dims):
                raise BuildError(f"--shapes {name}: rank {len(mn)} but the input has rank {len(dims)} "
                                 f"({fmt_shape(['?' if dyn(d) else d for d in dims])})")
            for i, d in enumerate(dims):
                if not dyn(d) and not mn[i] == opt[i] == mx[i] == d:
                    raise BuildError(f"--shapes {name}: dim {i} is static {d} in the model, got "
                                     f"{mn[i]}/{opt[i]}/{mx[i]}")
            prof[name] = (mn, opt, mx)
            continue
        cols, said = [], []
        for i, d in enumerate(dims):
            if dyn(d):
                r = DEFAULT_BATCH if i == 0 else DEFAULT_DIM
                said.append(f"dim {i}{f' ({d})' if isinstance(d, str) else ''} = {r[0]}/{r[1]}/{r[2]}")
            else:
                r = (d, d, d)
            cols.append(r)
        prof[name] = tuple(tuple(c[k] for c in cols) for k in range(3))  # type: ignore[assignment]
        if said:
            mn, opt, mx = prof[name]
            notes.append(f"profile {name}: {', '.join(said)} -> min {fmt_shape(mn)} opt {fmt_shape(opt)} "
                         f"max {fmt_shape(mx)} (defaults; set with --shapes {name}:MIN/OPT/MAX)")
    return prof, notes


# ---------------------------------------------------------------- model


def plugin_nodes(model) -> list:
    """Nodes the parser will import as plugins of this suite."""
    return [n for n in model.graph.node if n.op_type in ops.OPS or n.domain == ops.DOMAIN]


def _attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return a.s.decode() if a.s else default
    return default


def load_onnx(path: str | os.PathLike):
    p = Path(path)
    if not p.is_file():
        raise BuildError(f"{p}: no such ONNX file")
    try:
        from .graph import GraphError, load_model
    except ImportError:
        import onnx

        try:
            return onnx.load(str(p))
        except Exception as e:  # protobuf DecodeError etc.
            raise BuildError(f"{p}: not a readable ONNX model ({type(e).__name__}: {e})") from None
    try:
        return load_model(p)
    except GraphError as e:
        raise BuildError(f"{p}: {e}") from None


def prepare(model, substitute: bool = True, fp16: bool = False, log=print):
    """Substitute plugin nodes, then convert to FP16 (keeping FP32 I/O) if asked.

    Returns (model, substitution report or None).
    """
    report = None
    if substitute:
        try:
            from .graph import substitute as _sub
        except ImportError as e:
            raise BuildError(f"ONNX substitution (trtplugins.graph) unavailable: {e}; pass --no-substitute") from None
        model, report = _sub(model)
        log(f"substitution: {report}")
    if fp16:
        try:
            from .graph import convert_fp16
        except ImportError as e:
            raise BuildError(f"FP16 conversion (trtplugins.graph.convert_fp16) unavailable: {e}") from None
        model = convert_fp16(model, keep_io_types=True)
        log("fp16: converted the model to FP16 (FP32 inputs/outputs kept)")
    return model, report


# ---------------------------------------------------------------- plugins


def library_name(be: Backend, variant: str = "loadlib") -> str:
    tail = "_autoreg" if variant == "autoreg" else ""
    return f"libtrtplugins_trt{be.major if not be.rtx else 11}{tail}.so"


def _library_hint(be: Backend) -> str:
    if be.rtx:
        return ("TensorRT-RTX imports only IPluginV3 plugins (IPluginCreatorV3One) from ONNX, and this suite's "
                "plugins are IPluginV2DynamicExt: build with --no-substitute for TensorRT-RTX")
    try:
        from . import library_path

        where = str(library_path(be.major))
    except Exception:
        where = library_name(be)
    return f"load {where} (--plugins PATH, or trtplugins.load())"


def load_plugins(be: Backend, lib: str | None = None, required: bool = True, log=print) -> str | None:
    """Load the plugin library into the backend's registry. lib: explicit path
    (a *_autoreg* library is dlopen'ed, others go through registry.load_library)."""
    reg = be.trt.get_plugin_registry()
    if lib:
        p = Path(lib)
        if not p.is_file():
            raise BuildError(f"--plugins {lib}: no such file")
        if "autoreg" in p.name:
            try:
                ctypes.CDLL(str(p.resolve()), mode=ctypes.RTLD_GLOBAL)
            except OSError as e:
                raise BuildError(f"--plugins {lib}: dlopen failed: {e}") from None
        elif reg.load_library(str(p.resolve())) is None:
            raise BuildError(f"--plugins {lib}: {be.label} refused the library (loadLibrary needs getCreators and "
                             f"setLoggerFinder exported, built for TensorRT {be.major})")
        log(f"plugins: loaded {p}")
        return str(p)
    if be.rtx:
        if required:
            raise BuildError("model has plugin nodes: " + _library_hint(be))
        return None
    try:
        from . import load

        path = load(registry=reg)
    except Exception as e:  # ImportError until the native library exists, OSError/RuntimeError from load
        if required:
            raise BuildError(f"plugin library not loaded ({type(e).__name__}: {e}); {_library_hint(be)}") from None
        return None
    log(f"plugins: loaded {path}")
    return str(path)


def missing_creators(registry, nodes) -> list[str]:
    """One line per plugin node with no registered creator."""
    out = []
    for n in nodes:
        ver, ns = _attr(n, "plugin_version", ops.VERSION), _attr(n, "plugin_namespace", ops.NAMESPACE)
        if registry.get_creator(n.op_type, ver, ns) is None:
            out.append(f"node {n.name!r}: plugin {n.op_type} v{ver}{f' ns {ns!r}' if ns else ''} is not registered")
    return out


# ---------------------------------------------------------------- build


@dataclass
class BuildResult:
    plan: bytes
    backend: str
    seconds: float
    layers: dict[str, int]  # layer type -> count
    plugin_layers: list[tuple[str, str]]  # (layer name, type)
    layer_source: str  # "engine" or "network"
    io: list[dict]
    notes: list[str] = field(default_factory=list)
    substitution: Any = None
    path: str | None = None

    def summary(self) -> str:
        lines = [f"engine: {self.path or '(not saved)'}  {len(self.plan) / 2**20:.2f} MiB  built in "
                 f"{self.seconds:.2f} s with {self.backend}"]
        lines.append(f"layers ({self.layer_source}): {sum(self.layers.values())}")
        for t, c in sorted(self.layers.items(), key=lambda kv: (-kv[1], kv[0])):
            lines.append(f"  {t:<28}{c}")
        if self.plugin_layers:
            lines.append(f"plugin layers: {len(self.plugin_layers)}")
            lines += [f"  {name}  [{t}]" for name, t in self.plugin_layers]
        lines.append("bindings:")
        for b in self.io:
            prof = f"  profile {' / '.join(fmt_shape(s) for s in b['profile'])}" if b.get("profile") else ""
            lines.append(f"  {b['mode']:<6} {b['name']}: {b['dtype']} {fmt_shape(b['shape'])}{prof}")
        lines += self.notes
        return "\n".join(lines)

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("path", "backend", "seconds", "layers", "layer_source", "io", "notes")}
        d["size"] = len(self.plan)
        d["plugin_layers"] = [list(p) for p in self.plugin_layers]
        if self.substitution is not None and hasattr(self.substitution, "to_dict"):
            d["substitution"] = self.substitution.to_dict()
        return d


def _enum(v) -> str:
    return str(v).split(".")[-1]


def _network_layers(net) -> tuple[dict[str, int], list[tuple[str, str]]]:
    counts: dict[str, int] = {}
    plugins = []
    for i in range(net.num_layers):
        layer = net.get_layer(i)
        t = _enum(layer.type)
        counts[t] = counts.get(t, 0) + 1
        if t.startswith("PLUGIN"):
            plugins.append((layer.name, t))
    return counts, plugins


def _engine_layers(trt, engine) -> tuple[dict[str, int], list[tuple[str, str]]]:
    info = json.loads(engine.create_engine_inspector().get_engine_information(trt.LayerInformationFormat.JSON))
    counts: dict[str, int] = {}
    plugins = []
    for layer in info.get("Layers", []):
        if isinstance(layer, str):  # profiling verbosity too low for types
            t, name = "unknown", layer
        else:
            t, name = str(layer.get("LayerType", "unknown")), str(layer.get("Name", ""))
        counts[t] = counts.get(t, 0) + 1
        if "plugin" in t.lower():
            plugins.append((name, t))
    return counts, plugins


def _engine_io(trt, engine) -> list[dict]:
    io = []
    for i in range(engine.num_io_tensors):
        n = engine.get_tensor_name(i)
        inp = engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT
        b = {"name": n, "mode": "input" if inp else "output", "dtype": _enum(engine.get_tensor_dtype(n)),
             "shape": list(engine.get_tensor_shape(n))}
        if inp:
            b["profile"] = [list(s) for s in engine.get_tensor_profile_shape(n, 0)]
        io.append(b)
    return io


def _network_io(net, prof: Profile) -> list[dict]:
    io = []
    for mode, count, get in (("input", net.num_inputs, net.get_input), ("output", net.num_outputs, net.get_output)):
        for i in range(count):
            t = get(i)
            b = {"name": t.name, "mode": mode, "dtype": _enum(t.dtype), "shape": list(t.shape)}
            if t.name in prof:
                b["profile"] = [list(s) for s in prof[t.name]]
            io.append(b)
    return io


def _parse_errors(parser, be: Backend) -> list[str]:
    lines = []
    for i in range(parser.num_errors):
        e = parser.get_error(i)
        op, name, desc = e.node_operator(), e.node_name(), e.desc()
        where = f"node {name!r} ({op})" if name or op else "model"
        line = f"parse error at {where}: {desc}"
        if op in ops.OPS and ("Plugin not found" in desc or "IPluginV3" in desc or "plugin" in desc.lower()):
            line += f" -> {_library_hint(be)}"
        lines.append(line)
    return lines or ["parse failed without a parser error"]


def build(
    model,
    *,
    be: Backend | None = None,
    shapes: Profile | None = None,
    fp16: bool = False,
    workspace_mb: int | None = None,
    timing_cache: str | None = None,
    tf32: bool = True,
    onnx_path: str | None = None,
    verbose: bool = False,
    progress: bool = True,
    log=print,
) -> BuildResult:
    """Parse an (already prepared) ONNX ModelProto and build a serialized engine.

    fp16 here only sets the FP16 builder flag, which exists on TensorRT 10 only;
    strongly typed backends take their precision from the model (see prepare()).
    """
    be = be or backend()
    trt = be.trt
    if fp16 and be.strongly_typed:
        raise BuildError(f"{be.label} is strongly typed (no FP16 builder flag): build from the FP16-converted model")
    logger = _Logger(trt, verbose)
    logger.quiet = True
    nodes = plugin_nodes(model)
    if nodes:
        missing = missing_creators(trt.get_plugin_registry(), nodes)
        if missing and not be.rtx:
            raise BuildError(f"{missing[0]}{f' (+{len(missing) - 1} more)' if len(missing) > 1 else ''}; "
                             f"{_library_hint(be)}")

    builder = trt.Builder(logger)
    net = builder.create_network(0)  # explicit batch (10) / always strongly typed (11, RTX)
    parser = trt.OnnxParser(net, logger)
    if not parser.parse(model.SerializeToString(), str(onnx_path) if onnx_path else None):
        raise BuildError("\n".join(_parse_errors(parser, be)))

    config = builder.create_builder_config()
    config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED
    if workspace_mb:
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(workspace_mb) << 20)
    if fp16:
        config.set_flag(trt.BuilderFlag.FP16)
    if not tf32:
        config.clear_flag(trt.BuilderFlag.TF32)
    mon = _progress_monitor(trt, depth=3 if verbose else 1) if progress else None
    if mon is not None:
        config.progress_monitor = mon

    net_inputs = [(net.get_input(i).name, list(net.get_input(i).shape)) for i in range(net.num_inputs)]
    named = dict(onnx_inputs(model))  # keep ONNX dim names for the printed notes
    net_inputs = [(n, [named[n][i] if d < 0 and n in named and i < len(named[n]) and named[n][i] else d
                       for i, d in enumerate(dims)]) for n, dims in net_inputs]
    prof, notes = infer_profile(net_inputs, shapes)
    for n in notes:
        log(n)
    if any(not isinstance(d, int) or d < 0 for _, dims in net_inputs for d in dims) or shapes:
        p = builder.create_optimization_profile()
        for name, (mn, opt, mx) in prof.items():
            p.set_shape(name, mn, opt, mx)
        config.add_optimization_profile(p)

    cache = None
    if timing_cache and be.rtx:
        log("timing cache: ignored (timing cache operations are no-ops in TensorRT-RTX)")
    elif timing_cache:
        data = Path(timing_cache).read_bytes() if Path(timing_cache).is_file() else b""
        cache = config.create_timing_cache(data)
        if not config.set_timing_cache(cache, False):
            log(f"timing cache {timing_cache}: does not match this device/version, starting a new one")
            cache = config.create_timing_cache(b"")
            config.set_timing_cache(cache, False)

    t0 = time.perf_counter()
    logger.errors.clear()
    plan = builder.build_serialized_network(net, config)
    seconds = time.perf_counter() - t0
    if plan is None:
        raise BuildError("engine build failed: " + (logger.errors[-1] if logger.errors else "no error message"))
    plan = bytes(memoryview(plan))

    if cache is not None:
        Path(timing_cache).write_bytes(bytes(memoryview(config.get_timing_cache().serialize())))

    result_notes = []
    layers, plugins, src = *_network_layers(net), "network"
    io = _network_io(net, prof)
    engine = None
    if not be.rtx:  # RTX compiles kernels at deserialization, for the local GPU
        errs = len(logger.errors)
        engine = trt.Runtime(logger).deserialize_cuda_engine(plan)
        if engine is None:
            why = logger.errors[errs].splitlines()[0] if len(logger.errors) > errs else "unknown"
            result_notes.append(f"note: engine inspector unavailable (deserialization failed: {why})")
    if engine is not None:
        layers, plugins, src = *_engine_layers(trt, engine), "engine"
        io = _engine_io(trt, engine)
    return BuildResult(plan, be.label, seconds, layers, plugins, src, io, result_notes)


# ---------------------------------------------------------------- CLI


def cli_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="build_engine.py",
        description="Build a TensorRT engine that uses the trtplugins plugins from an ONNX model.")
    ap.add_argument("model", help="ONNX model (FP32)")
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
    ap.add_argument("--backend", choices=("auto", "tensorrt", "rtx"), default="auto")
    ap.add_argument("--save-onnx", metavar="FILE", help="also save the ONNX that was parsed (after substitution)")
    ap.add_argument("--summary-json", metavar="FILE", help="write the build summary as JSON")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args(argv)
    a.shapes = parse_shapes(a.shapes)
    if a.workspace is not None and a.workspace <= 0:
        raise BuildError("--workspace must be a positive number of MB")
    return a


def default_output(model: str, fp16: bool) -> str:
    p = Path(model)
    return str(p.with_suffix(".fp16.plan" if fp16 else ".plan"))


def build_file(path, *, be: Backend | None = None, substitute: bool = True, fp16: bool = False,
               plugins: str | None = None, save_onnx: str | None = None, log=print, **kw):
    """load_onnx -> prepare -> load_plugins -> build, with the FP16 rule of the backend
    (TensorRT 10: builder flag; TensorRT 11 / RTX: FP16-converted model).
    Returns (BuildResult, the ModelProto that was parsed)."""
    be = be or backend()
    model, report = prepare(load_onnx(path), substitute=substitute, fp16=fp16 and be.strongly_typed, log=log)
    if save_onnx:
        import onnx

        onnx.save(model, save_onnx)
        log(f"saved parsed ONNX to {save_onnx}")
    load_plugins(be, plugins, required=bool(plugin_nodes(model)), log=log)
    res = build(model, be=be, fp16=fp16 and not be.strongly_typed, onnx_path=str(path), log=log, **kw)
    res.substitution = report
    return res, model


def run(a: argparse.Namespace, log=print) -> BuildResult:
    be = backend(a.backend)
    log(f"backend: {be.label}")
    res, _ = build_file(a.model, be=be, substitute=not a.no_substitute, fp16=a.fp16, plugins=a.plugins,
                        save_onnx=a.save_onnx, log=log, shapes=a.shapes, workspace_mb=a.workspace,
                        timing_cache=a.timing_cache, tf32=not a.no_tf32, verbose=a.verbose)
    res.path = a.output or default_output(a.model, a.fp16)
    Path(res.path).write_bytes(res.plan)
    if a.summary_json:
        Path(a.summary_json).write_text(json.dumps(res.to_dict(), indent=2))
    return res


def main(argv=None) -> int:
    try:
        a = cli_args(argv)
        res = run(a)
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    print(res.summary())
    return 0
