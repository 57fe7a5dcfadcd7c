"""Engine-building pieces that need no TensorRT: shapes, profiles, model prep, CLI errors."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from trtplugins import engine as B

ROOT = Path(__file__).resolve().parents[1]


def plugin_model():
    n = helper.make_node("BiasActivation", ["x"], ["y"], name="fused_gelu", domain="trtplugins", activation="gelu",
                         bias=numpy_helper.from_array(np.zeros(8, np.float32)))
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", 8])  # noqa: E731
    return helper.make_model(helper.make_graph([n], "g", [vi("x")], [vi("y")]),
                             opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trtplugins", 1)])


def test_parse_shapes():
    assert B.parse_shapes(["x:1x1x64/4x128x64/16x512x64"]) == {"x": ((1, 1, 64), (4, 128, 64), (16, 512, 64))}
    assert B.parse_shapes(["in:0:2x3"]) == {"in:0": ((2, 3),) * 3}  # names may hold ':'
    for bad, msg in [("x", "expected name:min/opt/max"), ("x:1x2/3x4", "one shape or three"),
                     ("x:1xa", "bad shape"), ("x:4x1/2x1/3x1", "min <= opt <= max"), ("x:1/1x2/1", "ranks")]:
        with pytest.raises(B.BuildError, match=msg):
            B.parse_shapes([bad])


def test_infer_profile_defaults_and_notes(demo):
    inputs = B.onnx_inputs(onnx.load(demo))
    assert inputs == [("x", ["batch", "seq", 64])]
    prof, notes = B.infer_profile(inputs)
    assert prof == {"x": ((1, 1, 64), (4, 128, 64), (16, 512, 64))}
    assert len(notes) == 1 and "dim 0 (batch) = 1/4/16" in notes[0] and "dim 1 (seq) = 1/128/512" in notes[0]
    assert "--shapes x:" in notes[0]


def test_infer_profile_given_and_static():
    given = B.parse_shapes(["x:1x8x64/2x32x64/4x64x64"])
    prof, notes = B.infer_profile([("x", [-1, -1, 64]), ("mask", [2, 3])], given)
    assert prof["x"] == given["x"] and prof["mask"] == ((2, 3),) * 3 and notes == []
    with pytest.raises(B.BuildError, match="dim 2 is static 64"):
        B.infer_profile([("x", [-1, -1, 64])], B.parse_shapes(["x:1x1x32"]))
    with pytest.raises(B.BuildError, match="rank 2 but the input has rank 3"):
        B.infer_profile([("x", [-1, -1, 64])], B.parse_shapes(["x:1x64"]))
    with pytest.raises(B.BuildError, match="--shapes: 'y' is not a model input"):
        B.infer_profile([("x", [None])], B.parse_shapes(["y:1"]))


def test_plugin_nodes_and_cli_args(demo):
    assert [n.name for n in B.plugin_nodes(plugin_model())] == ["fused_gelu"]
    assert B.plugin_nodes(onnx.load(demo)) == []
    a = B.cli_args([str(demo), "--fp16", "--shapes", "x:1x1x64/2x8x64/4x16x64", "--workspace", "512"])
    assert a.fp16 and a.workspace == 512 and a.shapes["x"][2] == (4, 16, 64)
    assert B.default_output("m/model.onnx", True) == str(Path("m/model.fp16.plan"))
    with pytest.raises(B.BuildError, match="positive"):
        B.cli_args([str(demo), "--workspace", "0"])


def _cli(*args):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "build_engine.py"), *args],
                          capture_output=True, text=True, cwd=ROOT)


@pytest.mark.parametrize("args, msg", [
    (["missing.onnx", "--backend", "rtx"], "missing.onnx: no such ONNX file"),
    (["{demo}", "--shapes", "x:1x2"], "--shapes x: rank 2"),
])
def test_cli_user_errors_are_one_line(demo, args, msg):
    try:
        B.backend()
    except B.BuildError:
        pytest.skip("no TensorRT builder (tensorrt or tensorrt_rtx) installed")
    r = _cli(*[a.format(demo=demo) for a in args], "--no-substitute", "-o", str(demo.with_suffix(".x.plan")))
    assert r.returncode == 2
    err = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(err) == 1 and msg in err[0] and "Traceback" not in r.stderr


def test_cli_without_tensorrt_is_one_line(demo):
    try:
        import tensorrt  # noqa: F401

        pytest.skip("full TensorRT is installed: nothing to report missing")
    except ImportError:
        pass
    r = _cli(str(demo), "--backend", "tensorrt")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and "no TensorRT builder found" in r.stderr


def test_bad_onnx_is_user_error(tmp_path):
    p = tmp_path / "bad.onnx"
    p.write_bytes(b"not a model")
    with pytest.raises(B.BuildError, match="bad.onnx"):
        B.load_onnx(p)


def test_prepare_substitutes_demo(demo):
    model, report = B.prepare(onnx.load(demo), substitute=True, log=lambda *_: None)
    ops = [n.op_type for n in B.plugin_nodes(model)]
    assert ops.count("SkipNorm") >= 1, str(report)
    # the FFN's bias+GELU follows a MatMul: left to TensorRT's GEMM epilogue by default, reported
    assert "BiasActivation" not in ops and "bias+gelu after MatMul" in str(report)


def test_prepare_fp16_keeps_fp32_io(demo):
    model, _ = B.prepare(onnx.load(demo), substitute=False, fp16=True, log=lambda *_: None)
    assert model.graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT
    assert model.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT
    assert any(i.data_type == TensorProto.FLOAT16 for i in model.graph.initializer)


def test_full_tensorrt_build(demo, tmp_path):
    """Full TensorRT: build the substituted demo with the plugins, FP32 and FP16."""
    pytest.importorskip("tensorrt", reason="full TensorRT (module tensorrt) not installed")
    be = B.backend("tensorrt")
    for fp16 in (False, True):
        res, model = B.build_file(demo, be=be, fp16=fp16, log=lambda *_: None, progress=False)
        assert len(res.plan) > 0 and res.layer_source == "engine"
        assert {t for _, t in res.plugin_layers}, res.summary()
        assert [b["name"] for b in res.io] == ["x", "y"]
