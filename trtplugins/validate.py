"""Validate an engine with plugins against ONNX Runtime, through Polygraphy's Python API.

Reference: ONNX Runtime (CPU) on the ORIGINAL FP32 model (it cannot run plugin
nodes). Targets, compared with Polygraphy's Comparator and SimpleCompareFunc:
  trt  the TensorRT engine (--engine, or built here with the plugins); needs `tensorrt`
  cpu  the substituted (and with --fp16, FP16-converted) model evaluated on the CPU,
       plugin nodes through the numpy reference (trtplugins.graph.evaluate)
  ort  ONNX Runtime on the model without plugins: with --fp16 the FP16-converted model
       (FP16 rounding alone); in FP32 the model itself (a check of the harness)

Polygraphy semantics: an element fails only when its abs AND rel diff both
exceed the tolerances; rel diff is against the second runner, which is the
reference here. Inputs come from Polygraphy's DataLoader with the given seed
(uniform [0, 1)), so `polygraphy run --seed N` reproduces them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import engine as B
from . import loader, paths
from .engine.profiles import no_duplicates
from .graph import io as graph_io

#: Default tolerances per precision. Measured on the demo block on the CPU by
#: rounding like the GPU does (ONNX Runtime with casts inserted): TF32 matmul
#: inputs gave max abs error 2.0e-3, FP16 storage of every activation and weight
#: 5.7e-3 (output magnitude ~3.5). Defaults leave 2.5x / 3.5x margin for tactics
#: that accumulate differently on the GPU.
DEFAULT_TOL = {"fp32": (5e-3, 5e-3), "fp16": (2e-2, 2e-2)}  # (atol, rtol)
TARGETS = ("auto", "trt", "cpu", "ort")
#: exit code of a run that matched but compared no engine (auto target without full TensorRT)
EXIT_NO_ENGINE = 3


class ValidationError(B.BuildError):
    """A user-facing failure (bad arguments, missing dependency)."""


def _polygraphy():
    try:
        from polygraphy.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
        from polygraphy.comparator import Comparator, DataLoader, SimpleCompareFunc
        from polygraphy.logger import G_LOGGER
    except ImportError as e:
        raise ValidationError(f"Polygraphy / ONNX Runtime not installed ({e}): pip install polygraphy onnxruntime")
    return OnnxrtRunner, SessionFromOnnx, SimpleCompareFunc, Comparator, DataLoader, G_LOGGER


def _np_dtype(elem_type: int):
    from onnx import helper

    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))


def input_shapes(model, given: dict[str, tuple] | None = None) -> tuple[dict[str, tuple], list[str]]:
    """Concrete shape per input: `given`, else the opt shape of build.infer_profile."""
    given = dict(given or {})
    prof, notes = B.infer_profile(B.onnx_inputs(model), {k: (v, v, v) for k, v in given.items()},
                                  flag="--input-shape")
    return {k: v[1] for k, v in prof.items()}, [n.replace("profile", "input", 1).split(" -> ")[0] + " (opt)"
                                                    for n in notes]


def _metadata(model, shapes):
    from polygraphy.common import TensorMetadata

    meta = TensorMetadata()
    inits = {i.name for i in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name not in inits:
            meta.add(vi.name, _np_dtype(vi.type.tensor_type.elem_type), shapes[vi.name])
    return meta


def _cpu_runner(model, name):
    """A Polygraphy runner over trtplugins.graph.evaluate (plugin nodes via the numpy reference)."""
    from polygraphy.backend.base import BaseRunner

    try:
        from .graph import evaluate
    except ImportError as e:
        raise ValidationError(f"trtplugins.graph.evaluate unavailable ({e}); use --target trt or ort") from None

    class CpuRunner(BaseRunner):
        def __init__(self):
            super().__init__(name=name)

        def get_input_metadata_impl(self):
            return _metadata(model, {vi.name: [d.dim_value or -1 for d in vi.type.tensor_type.shape.dim]
                                     for vi in model.graph.input})

        def infer_impl(self, feed_dict):
            t0 = time.perf_counter()
            with graph_io.in_workspace(model):
                out = evaluate(model, feed_dict)
            self.inference_time = time.perf_counter() - t0
            return OrderedDict((o.name, np.asarray(out[o.name])) for o in model.graph.output)

    return CpuRunner()


def _ort_runner(model, name, path=None):
    """Polygraphy's ONNX Runtime runner; a large model goes by file (its external data)."""
    OnnxrtRunner, SessionFromOnnx, *_ = _polygraphy()
    if graph_io.is_large(model):
        src = str(path) if path is not None else str(graph_io.model_file(model))
    else:
        src = model.SerializeToString()
    return OnnxrtRunner(SessionFromOnnx(src, providers=["CPUExecutionProvider"]), name=name)


def _check_reference_runs(ref, loader_) -> None:
    """Run the reference once on the first feed, before any long work: input shapes that do not
    fit the model (a defaulted dynamic dim, a wrong --input-shape) fail here with one line."""
    feed = next(iter(loader_))
    try:
        with ref:
            ref.infer(feed)
    except Exception as e:  # ONNX Runtime's error types are not public
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        shapes = ", ".join(f"{k}={B.fmt_shape(v.shape)}" for k, v in feed.items())
        raise ValidationError(f"the model does not run with inputs {shapes} (set them with --input-shape "
                              f"NAME:DIMS): ONNX Runtime: {first}") from None


def compare(target, reference, loader, atol: float, rtol: float) -> tuple[dict[str, dict], bool]:
    """Run both Polygraphy runners on the loader's feeds and compare with SimpleCompareFunc.
    Returns per-output {max_abs, max_rel, mean_abs, passed} (worst over iterations) and overall pass."""
    *_, SimpleCompareFunc, Comparator, _, _ = _polygraphy()
    results = Comparator.run([target, reference], data_loader=loader)  # reference second: rel diff against it
    acc = Comparator.compare_accuracy(results, compare_func=SimpleCompareFunc(atol=atol, rtol=rtol, check_shapes=True))
    pair = acc if hasattr(acc, "keys") else acc[0]  # 0.53 returns a list of AccuracyResult
    outputs: dict[str, dict] = {}
    for per_iter in pair[(target.name, reference.name)]:
        for name, c in per_iter.items():
            o = outputs.setdefault(name, {"max_abs": 0.0, "max_rel": 0.0, "mean_abs": 0.0, "passed": True})
            o["max_abs"] = max(o["max_abs"], float(c.max_absdiff))
            o["max_rel"] = max(o["max_rel"], float(c.max_reldiff))
            o["mean_abs"] = max(o["mean_abs"], float(c.mean_absdiff))
            o["passed"] = o["passed"] and bool(c)
    if not outputs:
        raise ValidationError("no outputs in common between target and reference")
    return outputs, bool(acc) and all(o["passed"] for o in outputs.values())


@dataclass
class Result:
    passed: bool
    report: dict

    def table(self) -> str:
        r = self.report
        lines = [f"{r['target_runner']} vs {r['reference_runner']}  ({r['precision']}, atol {r['atol']:g}, "
                 f"rtol {r['rtol']:g}, seed {r['seed']}, {r['iterations']} iteration(s))"]
        for name, o in r["outputs"].items():
            lines.append(f"  {name:<20} max abs {o['max_abs']:.3e}  max rel {o['max_rel']:.3e}  "
                         f"mean abs {o['mean_abs']:.3e}  {'PASS' if o['passed'] else 'FAIL'}")
        if not self.passed:
            lines.append("FAILED: outputs differ beyond tolerance")
        elif self.no_engine:
            lines.append("NO ENGINE VALIDATED: full TensorRT (module tensorrt) is not installed, so only the CPU "
                         "plugin graph was compared (it matched); pass --target cpu to ask for that alone")
        else:
            lines.append("PASSED")
        return "\n".join(lines)

    @property
    def no_engine(self) -> bool:
        """An engine was asked for (target auto or trt) but none was compared."""
        return bool(self.report.get("engine_expected")) and not self.report.get("engine_compared")

    @property
    def exit_code(self) -> int:
        if not self.passed:
            return 1
        return EXIT_NO_ENGINE if self.no_engine else 0


def validate(
    model_path: str,
    *,
    engine: str | None = None,
    precision: str = "fp32",
    atol: float | None = None,
    rtol: float | None = None,
    seed: int = 1,
    iterations: int = 1,
    shapes: dict[str, tuple] | None = None,
    target: str = "auto",
    substitute: bool = True,
    plugins: str | None = None,
    log=print,
) -> Result:
    *_, DataLoader, _ = _polygraphy()
    if precision not in DEFAULT_TOL:
        raise ValidationError(f"precision {precision!r}: expected fp32 or fp16")
    if target not in TARGETS:
        raise ValidationError(f"--target {target!r}: expected one of {TARGETS}")
    fp16 = precision == "fp16"
    d_atol, d_rtol = DEFAULT_TOL[precision]
    atol, rtol = d_atol if atol is None else atol, d_rtol if rtol is None else rtol
    for flag, v in (("--atol", atol), ("--rtol", rtol)):
        if not (v >= 0 and np.isfinite(v)):
            raise ValidationError(f"{flag} {v:g}: must be a finite number >= 0")
    if iterations < 1:
        raise ValidationError(f"--iterations {iterations}: must be >= 1")
    if plugins is not None:
        try:
            loader.check_library_file(plugins)
        except loader.PluginLibraryError as e:
            raise ValidationError(f"--plugins: {e}") from None
    if engine is not None and not Path(engine).is_file():
        raise ValidationError(f"--engine {engine}: {'is a folder' if Path(engine).is_dir() else 'no such file'}")
    model = B.load_onnx(model_path)
    concrete, notes = input_shapes(model, shapes)
    for n in notes:
        log(n)
    ref = _ort_runner(model, "onnxrt-fp32", path=model_path)
    loader_ = DataLoader(seed=seed, iterations=iterations, input_metadata=_metadata(model, concrete))
    _check_reference_runs(ref, loader_)

    engine_expected = target in ("auto", "trt")
    if target == "auto":
        try:
            be = B.backend("tensorrt")
            target = "trt"
        except B.BuildError:
            if engine:
                raise ValidationError("--engine given but full TensorRT (module tensorrt) is not installed") from None
            target = "cpu"
            log("full TensorRT (module tensorrt) not installed: NO ENGINE is validated; comparing the CPU evaluation "
                "of the plugin graph instead")
    elif target != "trt" and (engine or plugins):
        log(f"note: --engine / --plugins are not used with --target {target}")

    info: dict = {}
    if target == "trt":
        from polygraphy.backend.trt import EngineFromBytes, TrtRunner

        be = B.backend("tensorrt")
        if engine:
            B.load_plugins(be, plugins, required=False, log=log)
            plan = Path(engine).read_bytes()
        else:
            prof = {k: (v, v, v) for k, v in concrete.items()}
            res, _ = B.build_file(model_path, be=be, substitute=substitute, fp16=fp16, plugins=plugins, log=log,
                                  shapes=prof, progress=False)
            plan = res.plan
        info["backend"] = be.label
        tgt = TrtRunner(EngineFromBytes(plan), name=f"trt-{precision}")
    elif target == "cpu":
        prepared, _ = B.prepare(model, substitute=substitute, fp16=fp16, log=log)
        tgt = _cpu_runner(prepared, f"cpu-plugins-{precision}")
    elif target == "ort":
        prepared, _ = B.prepare(model, substitute=False, fp16=fp16, log=log)
        tgt = _ort_runner(prepared, f"onnxrt-{precision}-target")

    outputs, passed = compare(tgt, ref, loader_, atol, rtol)
    import onnxruntime

    report = {
        "model": str(model_path),
        "engine": engine,
        "precision": precision,
        "target": target,
        "target_runner": tgt.name,
        "reference_runner": ref.name,
        "reference": f"ONNX Runtime {onnxruntime.__version__} CPUExecutionProvider on the original FP32 model",
        "atol": atol,
        "rtol": rtol,
        "seed": seed,
        "iterations": iterations,
        "inputs": {k: list(v) for k, v in concrete.items()},
        "input_distribution": "uniform [0, 1) (Polygraphy DataLoader)",
        "outputs": outputs,
        "passed": passed,
        "engine_compared": target == "trt",
        "engine_expected": engine_expected,  # auto / trt: a run without an engine did not do its job
        **info,
    }
    return Result(passed, report)


def _shape_arg(specs) -> dict[str, tuple]:
    out = {}
    for s in specs:
        name, sep, shape = s.rpartition(":")
        if not sep or not name:
            raise ValidationError(f"bad --input-shape {s!r}: expected name:DIMS, e.g. x:4x128x64")
        out[name] = B.parse_shape(shape, "--input-shape")
    no_duplicates([s.rpartition(":")[0] for s in specs], "--input-shape")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="validate.py", description=__doc__.splitlines()[0])
    ap.add_argument("model", help="the original FP32 ONNX model")
    ap.add_argument("--engine", help="plan to validate (default: build one with the plugins; needs tensorrt)")
    ap.add_argument("--fp16", action="store_true", help="validate FP16 (TensorRT 11: built from the FP16 model)")
    ap.add_argument("--target", choices=TARGETS, default="auto", help="what to compare against ONNX Runtime")
    ap.add_argument("--atol", type=float, help=f"default fp32 {DEFAULT_TOL['fp32'][0]:g}, fp16 {DEFAULT_TOL['fp16'][0]:g}")
    ap.add_argument("--rtol", type=float, help=f"default fp32 {DEFAULT_TOL['fp32'][1]:g}, fp16 {DEFAULT_TOL['fp16'][1]:g}")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--iterations", type=int, default=1)
    ap.add_argument("--input-shape", nargs="+", default=[], metavar="NAME:DIMS", help="e.g. x:4x128x64")
    ap.add_argument("--no-substitute", action="store_true")
    ap.add_argument("--plugins", metavar="LIB", help="plugin library (default: trtplugins.load())")
    ap.add_argument("--report", metavar="FILE.json", help="write the JSON report")
    ap.add_argument("--verbose", action="store_true", help="Polygraphy's own log")
    a = ap.parse_args(argv)
    try:
        if a.report:
            paths.output_file(a.report, "--report", inputs=[a.model, a.engine])
        *_, G_LOGGER = _polygraphy()
        G_LOGGER.module_severity = G_LOGGER.INFO if a.verbose else G_LOGGER.WARNING
        r = validate(a.model, engine=a.engine, precision="fp16" if a.fp16 else "fp32", atol=a.atol, rtol=a.rtol,
                     seed=a.seed, iterations=a.iterations, shapes=_shape_arg(a.input_shape), target=a.target,
                     substitute=not a.no_substitute, plugins=a.plugins)
    except (B.BuildError, paths.PathError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(r.table())
    if a.report:
        Path(a.report).write_text(json.dumps(r.report, indent=2))
        print(f"report: {a.report}")
    return r.exit_code
