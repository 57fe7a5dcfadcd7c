"""TensorRT-RTX as a real builder on the CPU: parse, profile, build, serialize, summary.

TensorRT-RTX cannot run engines here (no GPU; its runtime also refuses compute
capability 9.0), so nothing is executed. Its ONNX parser imports only IPluginV3
plugins; the tests below pin that down with our real V2 creators.
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from trtplugins import build as B
from trtplugins.demo import make_model

ROOT = Path(__file__).resolve().parents[1]
try:
    BE = B.backend("rtx")
except B.BuildError:
    pytest.skip("TensorRT-RTX (tensorrt-rtx-cu13-bindings) not installed", allow_module_level=True)
RTX_V3_ONLY = "TensorRT-RTX imports IPluginV3 plugins registered with an IPluginCreatorV3One creator only"


def _demo(tmp, **kw):
    p = tmp / "demo.onnx"
    onnx.save(make_model(**kw), p)
    return p


def _plugin_model(op="BiasActivation"):
    n = helper.make_node(op, ["x"], ["y"], name="fused_gelu", domain="trtplugins", activation="gelu",
                         bias=numpy_helper.from_array(np.zeros(8, np.float32)))
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", 8])  # noqa: E731
    return helper.make_model(helper.make_graph([n], "g", [vi("x")], [vi("y")]),
                             opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trtplugins", 1)])


def test_build_demo_cli(tmp_path, capsys):
    demo = _demo(tmp_path, layers=2)
    plan, cache, js = tmp_path / "demo.plan", tmp_path / "tc.bin", tmp_path / "s.json"
    rc = B.main([str(demo), "--backend", "rtx", "--no-substitute", "-o", str(plan), "--timing-cache", str(cache),
                 "--workspace", "256", "--summary-json", str(js)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert plan.stat().st_size > 100_000
    assert "timing cache: ignored" in out and not cache.exists()  # no-op in RTX (deprecated since 1.2)
    assert "[build] Building engine" in err  # IProgressMonitor phases
    assert "dim 0 (batch) = 1/4/16" in out and "layers (network)" in out
    s = json.loads(js.read_text())
    assert s["size"] == plan.stat().st_size and s["backend"].startswith("TensorRT-RTX 1.")
    assert s["layers"]["MATRIX_MULTIPLY"] == 16 and s["layers"]["NORMALIZATION"] == 4  # 2 blocks
    assert s["plugin_layers"] == []
    x = next(b for b in s["io"] if b["name"] == "x")
    assert x["shape"] == [-1, -1, 64] and x["profile"] == [[1, 1, 64], [4, 128, 64], [16, 512, 64]]
    assert B.main([str(demo), "--backend", "rtx", "--no-substitute", "-o", str(plan), "--shapes", "x:1x1x64/2x16x64/2x32x64"]) == 0
    assert "profile 1x1x64 / 2x16x64 / 2x32x64" in capsys.readouterr().out


def test_parse_error_names_node():
    m = _plugin_model()
    m.graph.node[0].op_type = "NoSuchOp"
    with pytest.raises(B.BuildError, match=r"parse error at node 'fused_gelu' \(NoSuchOp\): .*Plugin not found"):
        B.build(m, be=BE, progress=False, log=lambda *_: None)


def test_plugin_nodes_without_library_on_rtx():
    with pytest.raises(B.BuildError, match="IPluginV3 plugins .* --no-substitute"):
        B.load_plugins(BE, None, required=True)


def _lib(major):
    try:
        from trtplugins import library_path

        p = library_path(major)
        return p if p.is_file() else None
    except Exception:
        return None


@pytest.mark.parametrize("major", [11, 10])
def test_rtx_registers_our_v2_creators_but_parser_refuses(major, tmp_path):
    """Real libtrtplugins_trt{10,11}.so in the RTX registry (in a subprocess: it is global state):
    V2 (version "1") and V3 (version "2") creators; a version-1 node is refused (V3 only)."""
    lib = _lib(major)
    if lib is None:
        pytest.skip(f"libtrtplugins_trt{major}.so not built")
    m = tmp_path / "p.onnx"
    onnx.save(_plugin_model(), m)
    code = f"""
import sys, json
sys.path.insert(0, {str(ROOT)!r})
from trtplugins import build as B
from trtplugins.demo import make_model
be = B.backend("rtx")
B.load_plugins(be, {str(lib)!r}, log=lambda *_: None)
reg = be.trt.get_plugin_registry()
out = {{"creators": sorted((c.name, type(c).__name__) for c in reg.all_creators if c.name in ("BiasActivation", "SkipNorm"))}}
try:
    B.build(B.load_onnx({str(m)!r}), be=be, progress=False, log=lambda *_: None)
except B.BuildError as e:
    out["error"] = str(e)
print(json.dumps(out))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["creators"] == [[op, kind] for op in ("BiasActivation", "SkipNorm") for kind in ("IPluginCreator", "IPluginCreatorV3One")]
    assert RTX_V3_ONLY in out["error"] and "fused_gelu" in out["error"] and "--no-substitute" in out["error"]


def test_substituted_demo_on_rtx(tmp_path):
    """With plugin nodes from the real substitution, RTX stops with the V3-only message."""
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_engine.py"), str(_demo(tmp_path)),
                        "--backend", "rtx", "-o", str(tmp_path / "d.plan")], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "IPluginV3" in r.stderr and "--no-substitute" in r.stderr
