"""TensorRT-RTX as a real builder on the CPU: parse, profile, build, serialize, summary.

TensorRT-RTX cannot run engines here (no GPU; its runtime also refuses compute
capability 9.0), so nothing is executed. Its ONNX parser imports only IPluginV3
plugins: the tests below pin that down with our real V2 creators, and build the
demo and real exports through build_engine.py --backend rtx with V3 plugin nodes.
"""
import json
import time
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
    _built_library()
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
    _built_library()  # a model with nodes in the plugin domain builds in the process that loads the library
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


# ---------------------------------------------------------------- issue 32: what the build process says


def _run_build(*args):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "build_engine.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=600)


def test_failed_build_shows_the_child_log_and_the_default_profile(exported, tmp_path):
    """Defect 2: an exported BERT built without --shapes failed with TensorRT's "kOPT ... violate shape
    constraints" alone: the child's log (the profile taken from defaults) was dropped on failure."""
    _built_library()
    model = tmp_path / "bert.onnx"
    onnx.save(exported("bert", 17), model)
    r = _run_build(model, "--backend", "rtx", "-o", tmp_path / "b.plan")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert "profile input_ids: dim 0 (batch) = 1/4/16, dim 1 (seq) = 1/128/512" in r.stdout  # from the child
    (err,) = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert "violate shape constraints" in err
    assert err.endswith("(the dynamic dims of input_ids, attention_mask took default profile values: set them with "
                        "--shapes NAME:MIN/OPT/MAX)")
    assert not (tmp_path / "b.plan").exists()


def test_timeout_stops_the_build_process(tmp_path):
    """Defect 2: rtx.build_engine(..., timeout=0.5) raised an uncaught subprocess.TimeoutExpired (here 0.1 s:
    less than the process needs to start, so it always runs out)."""
    from trtplugins.engine import rtx
    from trtplugins.graph import substitute

    _built_library()
    model, _ = substitute(make_model(), plugin_api="v3")
    t0 = time.perf_counter()
    with pytest.raises(rtx.RtxBuildError, match=r"^TensorRT-RTX build stopped after 0\.1 s \(timeout\)$"):
        rtx.build_engine(model, tmp_path / "m.plan", timeout=0.1)
    assert time.perf_counter() - t0 < 10 and not (tmp_path / "m.plan").exists()


def test_child_log_comes_while_it_builds(tmp_path):
    """Defect 2: the build process's lines came only after it ended. Each line reaches `log` as it is
    printed: the profile note (printed before the build) long before the build result."""
    from trtplugins.engine import rtx
    from trtplugins.graph import substitute

    _built_library()
    model, _ = substitute(make_model(hidden=256, heads=4, ffn=1024, layers=6), plugin_api="v3")
    seen = []
    res = rtx.build_result(model, log=lambda line: seen.append((time.perf_counter(), line)), progress=False)
    done = time.perf_counter()
    note = next(t for t, line in seen if line.startswith("profile x:"))
    assert res.seconds > 0.3 and done - note > res.seconds * 0.8, (res.seconds, done - note, seen)


def test_creator_refusal_is_said_without_a_wrong_hint(tmp_path):
    """Defect 3: a V3 SkipNorm node with epsilon=0 got "need plugin_version '2'" (it is "2") and never
    the creator's own reason, even with --verbose."""
    _built_library()
    n = helper.make_node("SkipNorm", ["x"], ["y"], name="sn", domain="trtplugins", plugin_version="2", norm="layer",
                         epsilon=0.0, gamma=numpy_helper.from_array(np.ones(8, np.float32)))
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", 8])  # noqa: E731
    m = tmp_path / "eps0.onnx"
    onnx.save(helper.make_model(helper.make_graph([n], "g", [vi("x")], [vi("y")]),
                                opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trtplugins", 1)]), m)
    r = _run_build(m, "--backend", "rtx", "--no-substitute", "-o", tmp_path / "e.plan")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-3000:]
    (err,) = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert err.startswith("error: parse error at node 'sn' (SkipNorm): ")
    assert err.endswith("SkipNorm::createPlugin: epsilon must be finite and > 0, got 0") and "plugin_version" not in err


def test_optional_fields_left_out_are_not_warned_about(exported, tmp_path):
    """Defect 8: every build printed "Attribute bias/beta not found in plugin node! ... may fail to build"
    for each optional field the substitution leaves out (RMSNorm: no beta, no bias)."""
    _built_library()
    model = tmp_path / "llama.onnx"
    onnx.save(exported("llama_rms", 17), model)
    r = _run_build(model, "--backend", "rtx", "--shapes", "x:1x1x32/2x8x32/4x16x32", "-o", tmp_path / "l.plan")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "not found in plugin node" not in r.stderr and "plugin layers: 2" in r.stdout
    r = _run_build(model, "--backend", "rtx", "--shapes", "x:1x1x32/2x8x32/4x16x32", "-o", tmp_path / "l.plan",
                   "--verbose")
    assert "Attribute beta not found in plugin node" in r.stderr  # still there for whoever asks


def test_build_process_runs_this_package_whatever_the_folder(tmp_path, monkeypatch):
    """The build process is started with `python -m`, which puts the current folder first on sys.path:
    a folder holding another trtplugins (a clone) must not replace the package that started it."""
    from trtplugins.engine import rtx
    from trtplugins.graph import substitute

    _built_library()
    fake = tmp_path / "trtplugins"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise SystemExit('the wrong trtplugins')\n")
    monkeypatch.chdir(tmp_path)
    model, _ = substitute(make_model(), plugin_api="v3")
    assert rtx.build_engine(model)["plugin_layers"] == ["SkipNorm_0", "SkipNorm_1"]
