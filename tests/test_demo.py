"""The demo transformer block: valid ONNX, dynamic batch/seq, the fusable patterns present."""
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "export_demo.py"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    p = tmp_path_factory.mktemp("demo") / "demo.onnx"
    r = subprocess.run([sys.executable, str(SCRIPT), "-o", str(p), "--layers", "2"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout
    return p


def test_structure(demo):
    m = onnx.load(demo)
    onnx.checker.check_model(m, full_check=True)
    ops = Counter(n.op_type for n in m.graph.node)
    assert ops["LayerNormalization"] == 4 and ops["Erf"] == 2 and ops["MatMul"] == 16 and ops["Softmax"] == 2
    dims = [d.dim_param or d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["batch", "seq", 64]
    prod = {o: n for n in m.graph.node for o in n.output}
    inits = {i.name for i in m.graph.initializer}
    # bias + GELU: MatMul -> Add(bias initializer) -> Div(sqrt2) -> Erf
    for erf in (n for n in m.graph.node if n.op_type == "Erf"):
        div = prod[erf.input[0]]
        add = prod[div.input[0]]
        assert div.op_type == "Div" and add.op_type == "Add" and add.input[1] in inits
        assert prod[add.input[0]].op_type == "MatMul"
    # residual + LayerNorm: LayerNormalization fed by an Add of two activations
    for ln in (n for n in m.graph.node if n.op_type == "LayerNormalization"):
        add = prod[ln.input[0]]
        assert add.op_type == "Add" and not set(add.input) & inits


def test_runs_with_dynamic_shapes(demo):
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime not installed")
    s = ort.InferenceSession(str(demo), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for shape in [(1, 1, 64), (3, 33, 64)]:
        y = s.run(None, {"x": rng.random(shape, dtype=np.float32)})[0]
        assert y.shape == shape and np.isfinite(y).all() and 0.5 < y.std() < 2.0


def test_deterministic_and_bad_args(tmp_path):
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    for p in (a, b):
        subprocess.run([sys.executable, str(SCRIPT), "-o", str(p), "--seed", "5"], check=True, capture_output=True)
    assert a.read_bytes() == b.read_bytes()
    r = subprocess.run([sys.executable, str(SCRIPT), "-o", str(a), "--hidden", "30", "--heads", "4"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "not divisible" in r.stderr and "Traceback" not in r.stderr


def test_demo_command_runs_the_main_job(tmp_path):
    """`trtplugins demo` (the README's first command): export, substitute, validate on the CPU (FP32 and
    FP16), then an engine with the builder that is installed, saying which, with the plugin layers
    where the plugin library was built."""
    import json

    from trtplugins import engine, loader

    out = tmp_path / "d"
    r = subprocess.run([sys.executable, "-m", "trtplugins", "demo", str(out)], capture_output=True, text=True,
                       cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert json.loads((out / "demo.report.json").read_text())["plugins"] == {"SkipNorm": 2}
    assert r.stdout.count("PASSED (max |diff| / max |ref| <= ") == 2 and "done: every step passed" in r.stdout
    try:
        be = engine.backend()
    except engine.BuildError:
        assert "skipped: no TensorRT builder found" in r.stdout and not (out / "demo.plan").exists()
        return
    assert f"backend: {be.label} (" in r.stdout and (out / "demo.plan").stat().st_size > 100_000
    try:
        loader.library_path(be.major)
    except loader.PluginLibraryError:
        assert "WITHOUT plugin layers" in r.stdout
        return
    assert "plugin layers: 2" in r.stdout and "WITHOUT" not in r.stdout
