"""Validation: Polygraphy's ONNX Runtime runner and Comparator on real arrays, report format, exit codes."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

pytest.importorskip("polygraphy", reason="polygraphy not installed")
pytest.importorskip("onnxruntime", reason="onnxruntime not installed")
from polygraphy.backend.onnxrt import OnnxrtRunner, SessionFromOnnx  # noqa: E402
from polygraphy.comparator import DataLoader  # noqa: E402

from trtplugins import validate as V  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


from trtplugins.demo import make_model as _make  # noqa: E402


def _ort(model, name):
    return OnnxrtRunner(SessionFromOnnx(model.SerializeToString(), providers=["CPUExecutionProvider"]), name=name)


def test_compare_real_arrays_pass_and_fail(demo):
    model = onnx.load(demo)
    other = _make(seed=0)
    gamma = next(i for i in other.graph.initializer if i.name == "block0.ln2.gamma")
    g = onnx.numpy_helper.to_array(gamma).copy()
    g[0] += 0.5  # one output channel off by ~0.5 * |normalized value|
    gamma.CopyFrom(onnx.numpy_helper.from_array(g, gamma.name))
    shapes, _ = V.input_shapes(model, {"x": (2, 16, 64)})
    loader = DataLoader(seed=3, iterations=2, input_metadata=V._metadata(model, shapes))

    outs, ok = V.compare(_ort(model, "a"), _ort(model, "b"), loader, 1e-6, 1e-6, 1e-6)
    assert ok and outs["y"]["max_abs"] == 0.0 and outs["y"]["passed"] and outs["y"]["worst"] == []

    for rule in V.RULES:
        outs, ok = V.compare(_ort(other, "bad"), _ort(model, "ref"), loader, 2e-3, 5e-3, 5e-3, rule)
        y = outs["y"]
        assert not ok and not y["passed"] and not y["passed_scale"] and not y["passed_elementwise"]
    assert 0.05 < y["max_abs"] < 3.0 and y["max_rel"] > 5e-3 and 0 < y["mean_abs"] < y["max_abs"] / 10
    assert y["scaled"] == pytest.approx(y["max_abs"] / y["max_ref"]) and 1.0 < y["max_ref"] < 10.0
    worst = y["worst"]
    assert len(worst) == V.WORST and [w["at"][-1] for w in worst] == [0] * V.WORST  # channel 0's gamma was changed
    assert abs(worst[0]["value"] - worst[0]["reference"]) == pytest.approx(y["max_abs"], rel=1e-6)


def test_input_shapes_from_profile_opt(demo):
    shapes, notes = V.input_shapes(onnx.load(demo))
    assert shapes == {"x": (4, 128, 64)} and "dim 0 (batch)" in notes[0]
    assert V.input_shapes(onnx.load(demo), {"x": (1, 3, 64)})[0] == {"x": (1, 3, 64)}


def _cli(*args):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "validate.py"), *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT)


def test_cli_ort_target_report(demo, tmp_path):
    rep = tmp_path / "r.json"
    r = _cli(demo, "--target", "ort", "--fp16", "--seed", "7", "--iterations", "2", "--input-shape", "x:2x8x64",
             "--report", rep)
    assert r.returncode == 0, r.stderr
    assert "PASSED" in r.stdout
    d = json.loads(rep.read_text())
    assert d["seed"] == 7 and d["iterations"] == 2 and d["inputs"] == {"x": [2, 8, 64]} and d["passed"]
    assert (d["atol"], d["rtol"]) == V.DEFAULT_TOL["fp16"] and (d["rule"], d["bound"]) == ("scale", V.DEFAULT_BOUND["fp16"])
    assert set(d["outputs"]["y"]) == {"scaled", "max_ref", "max_abs", "mean_abs", "max_rel", "max_rel_ref", "worst",
                                      "passed_scale", "passed_elementwise", "passed"}
    assert d["reference"].startswith("ONNX Runtime ") and d["reference_runner"] == "onnxrt-fp32"


def test_ort_target_needs_fp16(demo):
    """Defect 10: --target ort without --fp16 compared ONNX Runtime with itself and PASSED."""
    r = _cli(demo, "--target", "ort", "--input-shape", "x:2x8x64")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "add --fp16" in r.stderr


def test_cli_user_errors(demo):
    r = _cli(demo, "--engine", "nope.plan", "--target", "trt")
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.startswith("error:")
    r = _cli(demo, "--input-shape", "x2x8", "--target", "ort")
    assert r.returncode == 2 and "bad --input-shape" in r.stderr


def test_cpu_plugin_graph_fp32(demo, tmp_path):
    """The substituted graph (plugin nodes via the numpy reference) matches ORT on the original."""
    r = V.validate(str(demo), target="cpu", shapes={"x": (2, 16, 64)}, log=lambda *_: None)
    assert r.passed, r.table()
    assert r.report["outputs"]["y"]["max_abs"] < 1e-4


def test_ort_fp16_within_default_tolerance(demo):
    """FP16 rounding alone (ORT on the converted model) sits inside the FP16 defaults, outside FP32's."""
    r = V.validate(str(demo), target="ort", precision="fp16", shapes={"x": (2, 32, 64)}, log=lambda *_: None)
    assert r.passed, r.table()
    assert r.report["outputs"]["y"]["max_abs"] > 1e-4


def test_cli_mismatch_exits_1(demo):
    """Tolerance below FP16 rounding error: real mismatch -> exit 1 (needs FP16 conversion)."""
    r = _cli(demo, "--target", "ort", "--fp16", "--atol", "1e-7", "--rtol", "1e-7", "--input-shape", "x:1x8x64")
    assert r.returncode == 1 and "FAILED" in r.stdout


def test_trt_engine_fp32_fp16(demo):
    pytest.importorskip("tensorrt", reason="full TensorRT (module tensorrt) not installed")
    for prec in ("fp32", "fp16"):
        r = V.validate(str(demo), target="trt", precision=prec, shapes={"x": (2, 64, 64)}, log=lambda *_: None)
        assert r.passed, r.table()


def test_inputs_match_polygraphy_cli_seed(demo, tmp_path):
    """`polygraphy run --seed N` generates the same inputs as validate.py --seed N (README command)."""
    from polygraphy.json import load_json

    import shutil

    exe = shutil.which("polygraphy", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if not exe:
        pytest.skip("polygraphy CLI not found beside python or on PATH")
    inp = tmp_path / "inputs.json"
    r = subprocess.run([exe, "run", str(demo), "--onnxrt", "--seed", "4", "--input-shapes", "x:[2,8,64]",
                        "--save-inputs", str(inp)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    model = onnx.load(demo)
    ours = next(iter(DataLoader(seed=4, input_metadata=V._metadata(model, {"x": (2, 8, 64)}))))
    assert np.array_equal(load_json(str(inp))[0]["x"], ours["x"])


def _affine_model(scale, offset):
    """y = x * scale + offset over x[2, 8]."""
    from onnx import TensorProto, helper, numpy_helper

    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 8])  # noqa: E731
    nodes = [helper.make_node("Mul", ["x", "s"], ["m"]), helper.make_node("Add", ["m", "o"], ["y"])]
    inits = [numpy_helper.from_array(np.array(scale, np.float32), "s"), numpy_helper.from_array(np.array(offset, np.float32), "o")]
    return helper.make_model(helper.make_graph(nodes, "g", [vi("x")], [vi("y")], inits),
                             opset_imports=[helper.make_opsetid("", 17)])


def test_fp16_headline_is_relative_to_the_output_scale(demo):
    """Defect 5: FP16 validation read PASSED beside a 14.0 max relative error, without saying why
    (Polygraphy's rule passes an element on its abs diff). The rule is max |diff| / max |ref| with a
    default bound; the max relative error is shown with the |ref| where it is, the worst elements listed."""
    r = V.validate(str(demo), target="cpu", precision="fp16", shapes={"x": (4, 128, 64)}, log=lambda *_: None)
    y = r.report["outputs"]["y"]
    assert r.passed and (r.report["rule"], r.report["bound"]) == ("scale", V.DEFAULT_BOUND["fp16"])
    assert y["max_rel"] > 1.0 and y["max_rel_ref"] < 1e-3  # the 1402 %: a near-zero reference
    assert 1e-4 < y["scaled"] < V.DEFAULT_BOUND["fp16"] and y["passed_elementwise"]
    table = r.table()
    assert f"max |diff| / max |ref| {y['scaled']:.2e}" in table and f"max rel {y['max_rel']:.2e} (at |ref| " in table
    assert "    worst: [" in table
    assert table.splitlines()[-1] == f"PASSED (max |diff| / max |ref| <= {V.DEFAULT_BOUND['fp16']:g})"


def test_scale_rule_fails_what_the_elementwise_rule_passes():
    """A small output (max |ref| 1e-3) off by 5e-3: inside FP16's elementwise atol (2e-2), 5x its scale."""
    ref, off = _affine_model(1e-3, 0.0), _affine_model(1e-3, 5e-3)
    loader = DataLoader(seed=1, input_metadata=V._metadata(ref, {"x": (2, 8)}))
    args = (V.DEFAULT_BOUND["fp16"], *V.DEFAULT_TOL["fp16"])
    outs, ok = V.compare(_ort(off, "off"), _ort(ref, "ref"), loader, *args, "scale")
    y = outs["y"]
    assert not ok and y["passed_elementwise"] and not y["passed_scale"] and y["scaled"] > 4.0
    outs, ok = V.compare(_ort(off, "off"), _ort(ref, "ref"), loader, *args, "elementwise")
    assert ok  # Polygraphy's rule stays available (--rule elementwise, or --atol / --rtol)


def test_plugin_model_is_named_not_its_input_shapes(demo, tmp_path):
    """Defect 4: a substituted model (plugin nodes ONNX Runtime cannot run) got 'set --input-shape'."""
    from trtplugins.graph import substitute

    p = tmp_path / "demo.plugins.onnx"
    onnx.save(substitute(onnx.load(demo))[0], p)
    r = _cli(p, "--target", "cpu", "--input-shape", "x:2x8x64")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "plugin nodes (SkipNorm)" in r.stderr and "--input-shape" not in r.stderr


def test_onnx_runtime_refusal_says_its_reason_in_one_line(tmp_path):
    """Defect 4: a static model ONNX Runtime refuses (GroupNormalization-21, 3 groups on 8 channels)
    got ONNX Runtime's raw log, then advice to set --input-shape."""
    from onnx import TensorProto, helper, numpy_helper

    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 8, 4, 4])  # noqa: E731
    n = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3, epsilon=1e-5)
    w = [numpy_helper.from_array(np.full(8, v, np.float32), k) for k, v in (("s", 1.0), ("b", 0.0))]
    p = tmp_path / "gn.onnx"
    onnx.save(helper.make_model(helper.make_graph([n], "g", [vi("x")], [vi("y")], w),
                                opset_imports=[helper.make_opsetid("", 21)]), p)
    r = _cli(p, "--target", "cpu")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("error: ONNX Runtime cannot run the model with inputs x=1x8x4x4: ")
    assert "cannot be reshaped" in r.stderr and "--input-shape" not in r.stderr


def test_ops_validates_opt_in_substitutions_on_the_cpu(demo):
    """Defect 4: validate had no --ops, so opt-in substitutions could not be validated on the CPU."""
    r = _cli("--ops", "all", demo, "--target", "cpu", "--input-shape", "x:2x8x64")  # --ops before the model
    assert r.returncode == 0, r.stderr
    assert "-> BiasActivation" in r.stdout and "-> SkipNorm" in r.stdout and "PASSED" in r.stdout


def test_errors_of_nan_inf_and_shapes():
    ref = np.array([[1.0, -2.0, 0.0], [4.0, np.inf, np.nan]], np.float32)
    same = V._errors(ref.copy(), ref, 1e-6)
    assert same["passed_scale"] and same["scaled"] == 0.0 and same["max_ref"] == 4.0 and same["worst"] == []
    got = ref.copy()
    got[0, 1] = np.nan  # a NaN where the reference has a number
    got[0, 0] = 1.5
    o = V._errors(got, ref, 1e-3)
    assert not o["passed_scale"] and o["max_abs"] == np.inf and o["max_rel_ref"] == 2.0
    assert [w["at"] for w in o["worst"]] == [[0, 1], [0, 0]] and o["worst"][1] == {"at": [0, 0], "value": 1.5,
                                                                                     "reference": 1.0}
    assert not V._errors(got[:1], ref, 1.0)["passed_scale"]  # another shape
