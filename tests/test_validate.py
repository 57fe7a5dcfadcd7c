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

    outs, ok = V.compare(_ort(model, "a"), _ort(model, "b"), loader, 1e-6, 1e-6)
    assert ok and outs["y"]["max_abs"] == 0.0 and outs["y"]["passed"]

    outs, ok = V.compare(_ort(other, "bad"), _ort(model, "ref"), loader, 5e-3, 5e-3)
    y = outs["y"]
    assert not ok and not y["passed"]
    assert 0.05 < y["max_abs"] < 3.0 and y["max_rel"] > 5e-3 and 0 < y["mean_abs"] < y["max_abs"] / 10


def test_input_shapes_from_profile_opt(demo):
    shapes, notes = V.input_shapes(onnx.load(demo))
    assert shapes == {"x": (4, 128, 64)} and "dim 0 (batch)" in notes[0]
    assert V.input_shapes(onnx.load(demo), {"x": (1, 3, 64)})[0] == {"x": (1, 3, 64)}


def _cli(*args):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "validate.py"), *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT)


def test_cli_ort_target_report(demo, tmp_path):
    rep = tmp_path / "r.json"
    r = _cli(demo, "--target", "ort", "--seed", "7", "--iterations", "2", "--input-shape", "x:2x8x64",
             "--report", rep)
    assert r.returncode == 0, r.stderr
    assert "PASSED" in r.stdout
    d = json.loads(rep.read_text())
    assert d["seed"] == 7 and d["iterations"] == 2 and d["inputs"] == {"x": [2, 8, 64]} and d["passed"]
    assert (d["atol"], d["rtol"]) == V.DEFAULT_TOL["fp32"]
    assert set(d["outputs"]["y"]) == {"max_abs", "max_rel", "mean_abs", "passed"}
    assert d["reference"].startswith("ONNX Runtime ") and d["reference_runner"] == "onnxrt-fp32"


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
