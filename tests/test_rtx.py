"""TensorRT-RTX as a real builder on the CPU: parse, profile, build, serialize, summary.

TensorRT-RTX cannot run engines here (no GPU; its runtime also refuses compute
capability 9.0), so nothing is executed. Its ONNX parser imports only IPluginV3
plugins: the tests below pin that down with our real V2 creators, and build the
demo and real exports through build_engine.py --backend rtx with V3 plugin nodes.
"""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from trtplugins import engine as B
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


def test_build_cli_ops_fuses_the_opt_in_gated_unit(tmp_path, capsys):
    """A GEGLU FeedForward: left to the GEMM epilogue by default, a GatedActivation layer with --ops."""
    pytest.importorskip("torch", reason="the export needs torch (CPU build)")
    from test_gated_patterns import FeedForward, export

    src = tmp_path / "ff.onnx"
    onnx.save(export(FeedForward(), tmp_path / "m.onnx", 17, False), src)
    for ops, layers in (([], []), (["--ops", "default", "GatedActivation"], ["GatedActivation_0"])):
        js = tmp_path / "s.json"
        assert B.main([str(src), "--backend", "rtx", "-o", str(tmp_path / "ff.plan"), "--summary-json", str(js), *ops]) == 0
        s = json.loads(js.read_text())
        assert s["plugin_layers"] == layers, capsys.readouterr().out
        assert [r["pattern"] for r in s["substitution"]["left"]] == ([] if ops else ["geglu_erf"])


def test_parse_error_names_node():
    m = _plugin_model()
    m.graph.node[0].op_type = "NoSuchOp"
    with pytest.raises(B.BuildError, match=r"parse error at node 'fused_gelu' \(NoSuchOp\): .*Plugin not found"):
        B.build(m, be=BE, progress=False, log=lambda *_: None)


def test_rtx_takes_v3_plugin_nodes_only():
    assert B.plugin_api(BE) == "v3" and B.plugin_api(BE, "v3") == "v3"
    with pytest.raises(B.BuildError, match="--plugin-api v2: TensorRT-RTX imports only IPluginV3"):
        B.plugin_api(BE, "v2")


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
    V2 (version "1") and V3 (version "2") creators; a version-1 node is refused (V3 only) by the parser
    (in build's RTX build process, which loads the same library)."""
    lib = _lib(major)
    if lib is None:
        pytest.skip(f"libtrtplugins_trt{major}.so not built")
    m = tmp_path / "p.onnx"
    onnx.save(_plugin_model(), m)
    code = f"""
import sys, json
sys.path.insert(0, {str(ROOT)!r})
from trtplugins import engine as B
from trtplugins.demo import make_model
be = B.backend("rtx")
B.load_plugins(be, {str(lib)!r}, log=lambda *_: None)
reg = be.trt.get_plugin_registry()
out = {{"creators": sorted((c.name, type(c).__name__) for c in reg.all_creators if c.name in ("BiasActivation", "SkipNorm"))}}
try:
    B.build(B.load_onnx({str(m)!r}), be=be, progress=False, plugins={str(lib)!r}, log=lambda *_: None)
except B.BuildError as e:
    out["error"] = str(e)
print(json.dumps(out))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["creators"] == [[op, kind] for op in ("BiasActivation", "SkipNorm") for kind in ("IPluginCreator", "IPluginCreatorV3One")]
    assert RTX_V3_ONLY in out["error"] and "fused_gelu" in out["error"] and "--plugin-api v3" in out["error"]


def _built_library():
    lib = _lib(11) or _lib(10)
    if lib is None:
        pytest.skip("libtrtplugins_trt11.so / libtrtplugins_trt10.so not built (needs nvcc and TensorRT headers)")
    return lib


def _build_cli(tmp_path, model, *args):
    """scripts/build_engine.py --backend rtx (substitution with V3 nodes by default): (summary, plan)."""
    plan, js = tmp_path / "m.plan", tmp_path / "m.json"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_engine.py"), str(model), "--backend", "rtx",
                        "-o", str(plan), "--summary-json", str(js), *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "Traceback" not in r.stderr and "(v3 plugin nodes)" in r.stdout
    s = json.loads(js.read_text())
    assert plan.is_file() and plan.stat().st_size == s["size"] > 100_000
    return s, r.stdout


def _one_plugin_layer_per_substitution(s):
    replaced = s["substitution"]["replaced"]
    assert len(s["plugin_layers"]) == len(replaced) > 0
    assert sorted(s["plugin_layers"]) == sorted(r["node"] for r in replaced)
    assert s["plugin_layer_types"] == ["PLUGIN_V3"] * len(replaced)
    assert s["layers"]["PLUGIN_V3"] == len(replaced) and s["backend"].startswith("TensorRT-RTX 1.")


def test_substituted_demo_on_rtx(tmp_path):
    """Issue 10 item 3: build_engine.py --backend rtx substitutes V3 nodes and builds them as plugin layers."""
    _built_library()
    s, out = _build_cli(tmp_path, _demo(tmp_path, layers=2))
    _one_plugin_layer_per_substitution(s)
    assert s["substitution"]["plugins"] == {"SkipNorm": 4}  # bias+GELU after a MatMul: left to TensorRT
    assert s["layers"]["MATRIX_MULTIPLY"] == 16 and "NORMALIZATION" not in s["layers"]  # LayerNorms became plugins
    x = next(b for b in s["io"] if b["name"] == "x")
    assert x["profile"] == [[1, 1, 64], [4, 128, 64], [16, 512, 64]]
    assert "dim 0 (batch) = 1/4/16" in out and f"plugin layers: {len(s['plugin_layers'])}" in out


@pytest.mark.parametrize("kind, plugins", [("bert", {"SkipNorm": 5}),  # embeddings + broadcast positions too
                                           ("llama_rms", {"SkipNorm": 2})])
def test_substituted_exports_on_rtx(kind, plugins, exported, tmp_path):
    """Real torch exports: a BERT-like encoder (LayerNorms, GELU) and a LLaMA-like RMSNorm block."""
    _built_library()
    model = tmp_path / f"{kind}.onnx"
    onnx.save(exported(kind, 17), model)
    shapes = {"bert": ["input_ids:1x1/2x8/4x16", "attention_mask:1x1/2x8/4x16"], "llama_rms": ["x:1x1x32/2x8x32/4x16x32"]}
    s, _ = _build_cli(tmp_path, model, "--shapes", *shapes[kind])
    _one_plugin_layer_per_substitution(s)
    assert s["substitution"]["plugins"] == plugins


def test_v2_plugin_api_on_rtx_is_a_user_error(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_engine.py"), str(_demo(tmp_path)),
                        "--backend", "rtx", "--plugin-api", "v2", "-o", str(tmp_path / "d.plan")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert "--plugin-api v2: TensorRT-RTX imports only IPluginV3" in r.stderr and not (tmp_path / "d.plan").exists()
