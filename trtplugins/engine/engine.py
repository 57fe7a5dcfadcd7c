"""Parse a prepared ONNX model with TensorRT's parser and build a serialized engine."""

from __future__ import annotations

import os
import time
from pathlib import Path

from .. import ops, paths
from ..graph import io as graph_io
from .backend import Backend, _Logger, backend, progress_monitor
from .errors import BuildError
from .model import load_onnx, node_attr, plugin_nodes, prepare
from .plugins import library_hint, load_hint, load_plugins, missing_creators
from .plugins import plugin_api as choose_api
from .profiles import Profile, infer_profile, onnx_inputs
from . import rtx
from .report import BuildResult, engine_io, engine_layers, network_io, network_layers


def _parse_errors(parser, be: Backend, model, logged: list[str]) -> list[str]:
    """One line per parser error. At a plugin node of this suite: the creator's own reason when it
    refused the node (logged as "[trtplugins] Op::..."), else what is missing (a V3 node for
    TensorRT-RTX, or the library whose creator is not registered)."""
    nodes = {n.name: n for n in model.graph.node}
    lines = []
    for i in range(parser.num_errors):
        e = parser.get_error(i)
        op, name, desc = e.node_operator(), e.node_name(), e.desc()
        where = f"node {name!r} ({op})" if name or op else "model"
        line = f"parse error at {where}: {desc}"
        if op in ops.OPS:
            reasons = [m.removeprefix("[trtplugins] ") for m in logged if m.startswith(f"[trtplugins] {op}")]
            hint = None if reasons else _missing_plugin(be, nodes.get(name), op)
            line += f" {'; '.join(reasons)}" if reasons else (f" -> {hint}" if hint else "")
        lines.append(line)
    return lines or ["parse failed without a parser error"]


def _missing_plugin(be: Backend, node, op: str) -> str | None:
    """Why the parser found no plugin for a node of this suite, if something is missing."""
    version = node_attr(node, "plugin_version", ops.VERSION) if node is not None else ops.VERSION
    namespace = node_attr(node, "plugin_namespace", ops.NAMESPACE) if node is not None else ops.NAMESPACE
    if be.rtx and version != ops.V3_VERSION:
        return library_hint(be)
    if be.trt.get_plugin_registry().get_creator(op, version, namespace) is None:
        return load_hint(be)
    return None


def _parse(parser, model, onnx_path: str | None) -> bool:
    """Parse from memory; a large model (external weights) from its workspace file."""
    path = graph_io.model_file(model)
    if path is not None:
        return parser.parse_from_file(str(path))
    return parser.parse(model.SerializeToString(), str(onnx_path) if onnx_path else None)


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
    plugins: str | None = None,
    log=print,
) -> BuildResult:
    """Parse an (already prepared) ONNX ModelProto and build a serialized engine.

    fp16 here only sets the FP16 builder flag, which exists on TensorRT 10 only;
    strongly typed backends take their precision from the model (see prepare()).
    TensorRT-RTX builds a model with plugin nodes in a child process (engine/rtx.py) that
    loads `plugins` (default: the built plugin library).
    """
    be = be or backend()
    trt = be.trt
    if fp16 and be.strongly_typed:
        raise BuildError(f"{be.label} is strongly typed (no FP16 builder flag): build from the FP16-converted model")
    infer_profile(onnx_inputs(model), shapes)  # bad --shapes and empty dims fail here, before the parser runs
    logger = _Logger(trt, verbose)
    logger.quiet = True
    nodes = plugin_nodes(model)
    if nodes and be.rtx:
        if not rtx.in_build_process():
            return rtx.build_result(model, library=plugins, shapes=shapes, workspace_mb=workspace_mb,
                                    timing_cache=timing_cache, tf32=tf32, verbose=verbose, progress=progress, log=log)
    if nodes:
        missing = missing_creators(trt.get_plugin_registry(), nodes)
        if missing and not be.rtx:
            raise BuildError(f"{missing[0]}{f' (+{len(missing) - 1} more)' if len(missing) > 1 else ''}; "
                             f"{library_hint(be)}")

    builder = trt.Builder(logger)
    net = builder.create_network(0)  # explicit batch (10) / always strongly typed (11, RTX)
    parser = trt.OnnxParser(net, logger)
    logged = len(logger.errors)
    if not _parse(parser, model, onnx_path):
        raise BuildError("\n".join(_parse_errors(parser, be, model, logger.errors[logged:])))

    config = builder.create_builder_config()
    config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED
    if workspace_mb:
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(workspace_mb) << 20)
    if fp16:
        config.set_flag(trt.BuilderFlag.FP16)
    if not tf32:
        config.clear_flag(trt.BuilderFlag.TF32)
    mon = progress_monitor(trt, depth=3 if verbose else 1) if progress else None
    if mon is not None:
        config.progress_monitor = mon

    net_inputs = [(net.get_input(i).name, list(net.get_input(i).shape)) for i in range(net.num_inputs)]
    named = dict(onnx_inputs(model))  # keep ONNX dim names for the printed notes
    net_inputs = [(n, [named[n][i] if d < 0 and n in named and i < len(named[n]) and named[n][i] else d
                       for i, d in enumerate(dims)]) for n, dims in net_inputs]
    prof, notes = infer_profile(net_inputs, shapes)
    for n in notes:
        log(n)
    guessed = [n for n, dims in net_inputs
               if n not in (shapes or {}) and any(not isinstance(d, int) or d < 0 for d in dims)]
    defaulted = (f" (the dynamic dims of {', '.join(guessed)} took default profile values: set them with "
                 f"--shapes NAME:MIN/OPT/MAX)") if guessed else ""
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
        raise BuildError("engine build failed: " + (logger.errors[-1] if logger.errors else "no error message")
                         + defaulted)
    plan = bytes(memoryview(plan))

    if cache is not None:
        paths.write_file(timing_cache, bytes(memoryview(config.get_timing_cache().serialize())), "--timing-cache")

    result_notes = []
    layers, plugins, src = *network_layers(net), "network"
    io = network_io(net, prof)
    engine = None
    if not be.rtx:  # RTX compiles kernels at deserialization, for the local GPU
        errs = len(logger.errors)
        engine = trt.Runtime(logger).deserialize_cuda_engine(plan)
        if engine is None:
            why = logger.errors[errs].splitlines()[0] if len(logger.errors) > errs else "unknown"
            result_notes.append(f"note: engine inspector unavailable (deserialization failed: {why})")
    if engine is not None:
        layers, plugins, src = *engine_layers(trt, engine), "engine"
        io = engine_io(trt, engine)
    return BuildResult(plan, be.label, seconds, layers, plugins, src, io, result_notes)


def build_file(path, *, be: Backend | None = None, substitute: bool = True, fp16: bool = False,
               plugins: str | None = None, save_onnx: str | None = None, plugin_api: str | None = None,
               patterns: list[str] | None = None, log=print, **kw):
    """load_onnx -> prepare -> load_plugins -> build, with the FP16 rule of the backend
    (TensorRT 10: builder flag; TensorRT 11 / RTX: FP16-converted model) and its plugin API
    (TensorRT-RTX: V3 nodes; full TensorRT: ops.DEFAULT_API unless plugin_api says otherwise).
    Returns (BuildResult, the ModelProto that was parsed)."""
    be = be or backend()
    api = choose_api(be, plugin_api)
    model, report = prepare(load_onnx(path), substitute=substitute, fp16=fp16 and be.strongly_typed, log=log,
                            plugin_api=api, patterns=patterns)
    if save_onnx:
        graph_io.save_model(model, save_onnx, "--save-onnx")
        log(f"saved parsed ONNX to {save_onnx}")
    lib = load_plugins(be, plugins, required=bool(plugin_nodes(model)), log=log)
    res = build(model, be=be, fp16=fp16 and not be.strongly_typed, onnx_path=os.fspath(path), plugins=lib, log=log,
                **kw)
    res.substitution = report
    return res, model
