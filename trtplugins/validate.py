"""Validate an engine with plugins against ONNX Runtime, through Polygraphy's Python API.

Reference: ONNX Runtime (CPU) on the ORIGINAL FP32 model (it cannot run plugin
nodes). Targets, run with Polygraphy's Comparator:
  trt  the TensorRT engine (--engine, or built here with the plugins); needs `tensorrt`
  cpu  the substituted (and with --fp16, FP16-converted) model evaluated on the CPU,
       plugin nodes through the numpy reference (trtplugins.graph.evaluate)
  ort  ONNX Runtime on the FP16-converted model without plugins (--fp16 only: FP16
       rounding alone)

Rules (--rule): "scale" (default), per output max |diff| / max |ref| <= bound, the
error relative to the output's scale as the project's GPU tests measure it; or
"elementwise", Polygraphy's SimpleCompareFunc: an element fails only when its abs
AND rel diff both exceed --atol / --rtol (rel diff against the reference, so near-zero
references give large relative errors that pass on their abs diff). Both are always
reported, with the worst elements. Inputs come from Polygraphy's DataLoader with the
given seed (uniform [0, 1)), so `polygraphy run --seed N` reproduces them.
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

from . import args as arguments
from . import engine as B
from . import loader, ops, paths
from .engine.profiles import no_duplicates
from .graph import io as graph_io

#: Default tolerances per precision. Measured on the demo block on the CPU by
#: rounding like the GPU does (ONNX Runtime with casts inserted): TF32 matmul
#: inputs gave max abs error 2.0e-3, FP16 storage of every activation and weight
#: 5.7e-3 (output magnitude ~3.5). Defaults leave 2.5x / 3.5x margin for tactics
#: that accumulate differently on the GPU.
DEFAULT_TOL = {"fp32": (5e-3, 5e-3), "fp16": (2e-2, 2e-2)}  # (atol, rtol) of the elementwise rule
#: Default bound of max |diff| / max |ref| (the scale rule): the same measurements relative to the
#: output's scale (TF32 5.4e-4, FP16 storage 1.5e-3), with the same margins.
DEFAULT_BOUND = {"fp32": 2e-3, "fp16": 5e-3}
RULES = ("scale", "elementwise")
TARGETS = ("auto", "trt", "cpu", "ort")
WORST = 3  # worst elements reported per output
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


def quiet(yes: bool = True) -> None:
    """Polygraphy's and ONNX Runtime's own logs: warnings only and nothing (ONNX Runtime's errors come
    back as exceptions, which validate reports), or both in full."""
    *_, G_LOGGER = _polygraphy()
    G_LOGGER.module_severity = G_LOGGER.WARNING if yes else G_LOGGER.INFO
    import onnxruntime

    onnxruntime.set_default_logger_severity(4 if yes else 2)


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


def _check_reference_runs(ref, loader_, model, defaulted: bool) -> None:
    """Run the reference once on the first feed, before any long work: a model ONNX Runtime cannot
    run fails here with one line; --input-shape is suggested only where a dim was defaulted."""
    plugins = sorted({n.op_type for n in model.graph.node if n.domain == ops.DOMAIN})
    if plugins:
        raise ValidationError(f"the model has plugin nodes ({', '.join(plugins)}), which ONNX Runtime cannot run as "
                              f"the reference: give the model before substitution (validate substitutes it itself)")
    feed = next(iter(loader_))
    try:
        with ref:
            ref.infer(feed)
    except Exception as e:  # ONNX Runtime's error types are not public
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        shapes = ", ".join(f"{k}={B.fmt_shape(v.shape)}" for k, v in feed.items())
        hint = " (dynamic dims took defaults: set them with --input-shape NAME:DIMS)" if defaulted else ""
        raise ValidationError(f"ONNX Runtime cannot run the model with inputs {shapes}{hint}: {first}") from None


def compare(target, reference, loader, bound: float, atol: float, rtol: float,
            rule: str = "scale") -> tuple[dict[str, dict], bool]:
    """Run both Polygraphy runners on the loader's feeds and compare every output by both rules.
    Returns per output (worst over iterations) {scaled (max |diff| / max |ref|), max_ref, max_abs,
    mean_abs, max_rel, max_rel_ref (|ref| where max_rel is), worst [{at, value, reference}],
    passed_scale, passed_elementwise, passed (by `rule`)} and whether every output passed."""
    *_, SimpleCompareFunc, Comparator, _, _ = _polygraphy()
    results = Comparator.run([target, reference], data_loader=loader)  # reference second: rel diff against it
    acc = Comparator.compare_accuracy(results, compare_func=SimpleCompareFunc(atol=atol, rtol=rtol, check_shapes=True))
    pair = acc if hasattr(acc, "keys") else acc[0]  # 0.53 returns a list of AccuracyResult
    elementwise = {}
    for per_iter in pair[(target.name, reference.name)]:
        for name, c in per_iter.items():
            elementwise[name] = elementwise.get(name, True) and bool(c)
    outputs: dict[str, dict] = {}
    for got_it, ref_it in zip(results[target.name], results[reference.name]):
        for name, ref in ref_it.items():
            if name not in got_it:
                continue
            o = _errors(np.asarray(got_it[name]), np.asarray(ref), bound)
            if name not in outputs or o["scaled"] > outputs[name]["scaled"]:
                outputs[name] = o
    if not outputs:
        raise ValidationError("no outputs in common between target and reference")
    for name, o in outputs.items():
        o["passed_elementwise"] = elementwise.get(name, False)
        o["passed"] = o["passed_scale"] if rule == "scale" else o["passed_elementwise"]
    return outputs, all(o["passed"] for o in outputs.values())


def _errors(got: np.ndarray, ref: np.ndarray, bound: float) -> dict:
    """The scale rule's numbers for one output, and its worst elements."""
    if got.shape != ref.shape:
        return {"scaled": float("inf"), "max_ref": 0.0, "max_abs": float("inf"), "mean_abs": float("inf"),
                "max_rel": float("inf"), "max_rel_ref": 0.0, "worst": [], "passed_scale": False,
                "shape_mismatch": [list(got.shape), list(ref.shape)]}
    g, r = got.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
    with np.errstate(invalid="ignore"):
        diff = np.abs(g - r)
    diff[(g == r) | (np.isnan(g) & np.isnan(r))] = 0.0
    diff[np.isnan(diff)] = np.inf  # NaN where the reference has a number (or the reverse) is wrong
    finite = np.abs(r[np.isfinite(r)])
    scale = float(finite.max()) if finite.size else 0.0
    max_abs = float(diff.max()) if diff.size else 0.0
    scaled = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(diff == 0, 0.0, diff / np.abs(r))
    k_rel = int(np.argmax(rel)) if rel.size else 0
    order = [int(k) for k in np.argsort(diff)[::-1][:WORST] if diff[k] > 0]
    at = lambda k: [int(i) for i in np.unravel_index(k, got.shape)]  # noqa: E731
    return {"scaled": scaled, "max_ref": scale, "max_abs": max_abs,
            "mean_abs": float(diff.mean()) if diff.size else 0.0, "max_rel": float(rel[k_rel]) if rel.size else 0.0,
            "max_rel_ref": float(abs(r[k_rel])) if rel.size else 0.0,
            "worst": [{"at": at(k), "value": float(g[k]), "reference": float(r[k])} for k in order],
            "passed_scale": bool(scaled <= bound)}


@dataclass
class Result:
    passed: bool
    report: dict

    def table(self) -> str:
        r = self.report
        scale_rule = f"max |diff| / max |ref| <= {r['bound']:g}"
        elem_rule = f"elementwise, an element fails when abs > {r['atol']:g} and rel > {r['rtol']:g}"
        lines = [f"{r['target_runner']} vs {r['reference_runner']}  ({r['precision']}, seed {r['seed']}, "
                 f"{r['iterations']} iteration(s); rule: {scale_rule if r['rule'] == 'scale' else elem_rule})"]
        for name, o in r["outputs"].items():
            if "shape_mismatch" in o:
                got, ref = o["shape_mismatch"]
                lines.append(f"  {name}: shape {got}, the reference's {ref}  FAIL")
                continue
            lines.append(f"  {name}: max |diff| / max |ref| {o['scaled']:.2e} (max |ref| {o['max_ref']:.3g})  "
                         f"max abs {o['max_abs']:.2e}  mean abs {o['mean_abs']:.2e}  max rel {o['max_rel']:.2e} "
                         f"(at |ref| {o['max_rel_ref']:.2e})  {'PASS' if o['passed'] else 'FAIL'}")
            if o["worst"]:
                lines.append("    worst: " + "; ".join(f"{w['at']} {w['value']:.6g} vs {w['reference']:.6g}"
                                                      for w in o["worst"]))
        other = "elementwise" if r["rule"] == "scale" else "scale"
        agree = all(o[f"passed_{other}"] for o in r["outputs"].values())
        other_rule = elem_rule if other == "elementwise" else scale_rule
        lines.append(f"other rule ({other_rule}): {'PASS' if agree else 'FAIL'}")
        if not self.passed:
            lines.append("FAILED: outputs differ beyond tolerance")
        elif self.no_engine:
            lines.append("NO ENGINE VALIDATED: full TensorRT (module tensorrt) is not installed, so only the CPU "
                         "plugin graph was compared (it matched); pass --target cpu to ask for that alone")
        else:
            lines.append(f"PASSED ({scale_rule if r['rule'] == 'scale' else elem_rule})")
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
    patterns: list[str] | None = None,
    plugins: str | None = None,
    rule: str | None = None,
    bound: float | None = None,
    log=print,
) -> Result:
    """Compare `target` with ONNX Runtime on the original model. rule: "scale" (max |diff| /
    max |ref| <= bound) or "elementwise" (Polygraphy's atol / rtol); default "scale", or
    "elementwise" when atol or rtol is given. patterns: the substitution's ops (None: default policy)."""
    *_, DataLoader, _ = _polygraphy()
    if precision not in DEFAULT_TOL:
        raise ValidationError(f"precision {precision!r}: expected fp32 or fp16")
    if target not in TARGETS:
        raise ValidationError(f"--target {target!r}: expected one of {TARGETS}")
    fp16 = precision == "fp16"
    if target == "ort" and not fp16:
        raise ValidationError("--target ort compares ONNX Runtime on the FP16-converted model with the original: add "
                              "--fp16 (without it both sides run the same model)")
    rule = rule or ("elementwise" if atol is not None or rtol is not None else "scale")
    if rule not in RULES:
        raise ValidationError(f"--rule {rule!r}: expected one of {RULES}")
    d_atol, d_rtol = DEFAULT_TOL[precision]
    atol, rtol = d_atol if atol is None else atol, d_rtol if rtol is None else rtol
    bound = DEFAULT_BOUND[precision] if bound is None else bound
    for flag, v in (("--atol", atol), ("--rtol", rtol), ("--bound", bound)):
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
    _check_reference_runs(ref, loader_, model, defaulted=bool(notes))

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
                                  shapes=prof, progress=False, patterns=patterns)
            plan = res.plan
        info["backend"] = be.label
        tgt = TrtRunner(EngineFromBytes(plan), name=f"trt-{precision}")
    elif target == "cpu":
        prepared, _ = B.prepare(model, substitute=substitute, fp16=fp16, log=log, patterns=patterns)
        tgt = _cpu_runner(prepared, f"cpu-plugins-{precision}")
    elif target == "ort":
        prepared, _ = B.prepare(model, substitute=False, fp16=fp16, log=log)
        tgt = _ort_runner(prepared, f"onnxrt-{precision}-target")

    outputs, passed = compare(tgt, ref, loader_, bound, atol, rtol, rule)
    import onnxruntime

    report = {
        "model": str(model_path),
        "engine": engine,
        "precision": precision,
        "target": target,
        "target_runner": tgt.name,
        "reference_runner": ref.name,
        "reference": f"ONNX Runtime {onnxruntime.__version__} CPUExecutionProvider on the original FP32 model",
        "rule": rule,
        "bound": bound,
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


EPILOG = f"""exit codes: 0 matched; 1 outputs differ beyond the rule's tolerance; 2 user error (bad
arguments or files, a model ONNX Runtime cannot run); {EXIT_NO_ENGINE} matched, but NO ENGINE was validated (the
default target without full TensorRT compares the CPU plugin graph; --target cpu asks for that and exits 0)"""


def main(argv=None, prog: str = "trtplugins validate") -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0], epilog=EPILOG)
    arguments.add_model_and_ops(ap, "the original FP32 ONNX model (before substitution)")
    ap.add_argument("--engine", help="plan to validate (default: build one with the plugins; needs tensorrt)")
    ap.add_argument("--fp16", action="store_true", help="validate FP16 (TensorRT 11: built from the FP16 model)")
    ap.add_argument("--target", choices=TARGETS, default="auto",
                    help="what to compare with ONNX Runtime: trt (an engine), cpu (the plugin graph on the CPU), "
                         "ort (FP16 rounding alone, with --fp16); auto: trt with full TensorRT, else cpu")
    ap.add_argument("--rule", choices=RULES,
                    help="scale: max |diff| / max |ref| <= --bound per output (default); elementwise: Polygraphy's "
                         "rule with --atol / --rtol (the default when either is given)")
    ap.add_argument("--bound", type=float, help=f"scale rule bound; default fp32 {DEFAULT_BOUND['fp32']:g}, "
                                                f"fp16 {DEFAULT_BOUND['fp16']:g}")
    ap.add_argument("--atol", type=float, help=f"elementwise rule; default fp32 {DEFAULT_TOL['fp32'][0]:g}, "
                                               f"fp16 {DEFAULT_TOL['fp16'][0]:g}")
    ap.add_argument("--rtol", type=float, help=f"elementwise rule; default fp32 {DEFAULT_TOL['fp32'][1]:g}, "
                                               f"fp16 {DEFAULT_TOL['fp16'][1]:g}")
    ap.add_argument("--seed", type=int, default=1, help="Polygraphy DataLoader seed of the inputs (default 1)")
    ap.add_argument("--iterations", type=int, default=1, help="input sets compared (default 1)")
    ap.add_argument("--input-shape", nargs="+", default=[], metavar="NAME:DIMS",
                    help="input shapes, e.g. x:4x128x64 (default: static dims, and defaults for dynamic ones)")
    ap.add_argument("--no-substitute", action="store_true", help="compare the model without plugin nodes")
    ap.add_argument("--plugins", metavar="LIB", help="plugin library (default: trtplugins.load())")
    ap.add_argument("--report", metavar="FILE.json", help="write the JSON report")
    ap.add_argument("--verbose", action="store_true", help="Polygraphy's and ONNX Runtime's own logs")
    try:
        a = arguments.parse(ap, argv)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        if a.report:
            paths.output_file(a.report, "--report", inputs=[a.model, a.engine])
        quiet(not a.verbose)
        r = validate(a.model, engine=a.engine, precision="fp16" if a.fp16 else "fp32", atol=a.atol, rtol=a.rtol,
                     seed=a.seed, iterations=a.iterations, shapes=_shape_arg(a.input_shape), target=a.target,
                     substitute=not a.no_substitute, patterns=a.ops, plugins=a.plugins, rule=a.rule, bound=a.bound)
        print(r.table())
        if a.report:
            paths.write_file(a.report, json.dumps(r.report, indent=2), "--report")
            print(f"report: {a.report}")
    except (B.BuildError, paths.PathError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return r.exit_code
