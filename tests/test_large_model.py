"""Large models (defect 2): weights stored as ONNX external data are never loaded into one
protobuf. A >2 GB model would take minutes to write here, so the size thresholds of
trtplugins.graph.io are lowered and the demo model, saved with external data, takes exactly
the code path a model over 2 GB takes (big tensors stay external, small ones are loaded)."""
import hashlib

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from trtplugins import validate as V
from trtplugins.engine import backend as build_backend
from trtplugins.engine import BuildError, build, prepare
from trtplugins.demo import make_model
from trtplugins.graph import convert_fp16, io, load_model, substitute

from conftest import ort_run, plugin_nodes


@pytest.fixture
def large(tmp_path, monkeypatch):
    """The demo block saved with every tensor external; thresholds lowered so it counts as large."""
    m = make_model(layers=2)
    path = tmp_path / "user" / "big.onnx"
    path.parent.mkdir()
    ext = onnx.ModelProto()
    ext.CopyFrom(m)  # onnx.save with external data rewrites the tensors it is given
    onnx.save(ext, str(path), save_as_external_data=True, all_tensors_to_one_file=True, location="big.weights",
              size_threshold=128)  # shape constants inline, as onnx.save does (ORT reads no external shapes)
    monkeypatch.setattr(io, "LARGE_MODEL_BYTES", 1)
    monkeypatch.setattr(io, "SMALL_TENSOR_BYTES", 64 * 4)  # hidden-size vectors load, matrices stay external
    files = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in path.parent.iterdir()}
    yield m, path
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in path.parent.iterdir()} == files  # never written


def _external(model):
    return [t.name for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]


def test_load_keeps_big_tensors_external(large):
    full, path = large
    m = load_model(path)
    ext = _external(m)
    assert io.is_large(m) and ext and all(not t.raw_data for t in m.graph.initializer if t.name in ext)
    sizes = {t.name: int(np.prod(t.dims)) * 4 for t in full.graph.initializer}
    assert all(sizes[n] > io.SMALL_TENSOR_BYTES for n in ext)
    assert all(sizes[t.name] <= io.SMALL_TENSOR_BYTES for t in m.graph.initializer if t.name not in ext)
    # values read from the workspace equal the originals
    orig = {t.name: numpy_helper.to_array(t) for t in full.graph.initializer}
    for t in m.graph.initializer:
        np.testing.assert_array_equal(io.tensor_array(t), orig[t.name])


def test_substitute_save_and_run(large, tmp_path):
    full, path = large
    ref_model, _ = substitute(full)
    m = load_model(path)
    with io.in_workspace(m):
        out, report = substitute(m)
    assert len(plugin_nodes(out)) == len(plugin_nodes(ref_model)) > 0 and report.replaced
    assert _external(out)  # still not loaded
    saved = tmp_path / "out" / "sub.onnx"
    saved.parent.mkdir()
    io.save_model(out, saved)
    assert (saved.parent / "sub.onnx.data").is_file()
    reloaded = onnx.load(str(saved))  # plain onnx, external data next to the file
    want = {t.name: numpy_helper.to_array(t) for t in ref_model.graph.initializer}
    for t in reloaded.graph.initializer:
        np.testing.assert_array_equal(numpy_helper.to_array(t), want[t.name])


def test_fp16_conversion_stays_external(large, tmp_path):
    full, path = large
    m = load_model(path)
    with io.in_workspace(m):
        half = convert_fp16(m, keep_io_types=True)
    assert _external(half) and io.is_large(half)
    saved = tmp_path / "h.onnx"
    io.save_model(half, saved)
    feeds = {"x": np.random.default_rng(0).standard_normal((2, 8, 64)).astype(np.float32)}
    got = ort_run(onnx.load(str(saved)), feeds)["y"]
    ref = ort_run(full, feeds)["y"]
    assert np.abs(got - ref).max() < 2e-2


@pytest.mark.parametrize("target, precision", [("cpu", "fp32"), ("ort", "fp16")])
def test_validate_large(large, target, precision):
    _, path = large
    r = V.validate(str(path), target=target, precision=precision, shapes={"x": (2, 8, 64)}, log=lambda *_: None)
    assert r.passed, r.table()


def test_rtx_build_parses_from_the_workspace(large):
    """TensorRT-RTX's parser reads the external weights through the workspace file."""
    try:
        be = build_backend("rtx")
    except BuildError:
        pytest.skip("TensorRT-RTX (tensorrt-rtx-cu13-bindings) not installed")
    _, path = large
    m, _ = prepare(load_model(path), substitute=False, fp16=True, log=lambda *_: None)
    assert io.is_large(m)
    res = build(m, be=be, progress=False, log=lambda *_: None)
    assert len(res.plan) > 10_000 and res.layers.get("MATRIX_MULTIPLY") == 16
