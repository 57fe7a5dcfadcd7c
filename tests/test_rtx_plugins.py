"""TensorRT-RTX 1.7 as the real builder of engines that contain this suite's IPluginV3 plugins
(plugin_version "2"), on the CPU: its ONNX parser maps the node attributes to PluginFields,
calls our V3 creators and build-time methods, and serializes the plugins into the engine
(getFieldsToSerialize). trtplugins.engine.rtx.build_engine does it (see its docstring for why in
a child process)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from trtplugins import ops

rtx = pytest.importorskip("trtplugins.engine.rtx")
try:
    rtx.rtx_module()
except rtx.RtxBuildError as e:
    pytest.skip(f"TensorRT-RTX not installed: {e}", allow_module_level=True)
try:
    rtx._plugin_library(None)
except rtx.RtxBuildError as e:
    pytest.skip(str(e), allow_module_level=True)

HIDDEN = 16


def _bf16(values):
    """A BFLOAT16 TENSOR attribute (raw bits: numpy has no bfloat16)."""
    bits = (np.asarray(values, np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return helper.make_tensor("w", TensorProto.BFLOAT16, [len(values)], bits.tobytes(), raw=True)


def _model(nodes, inputs, outputs):
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", "seq", HIDDEN])  # noqa: E731
    graph = helper.make_graph(nodes, "g", [vi(n) for n in inputs], [vi(n) for n in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ops.DOMAIN, 1)])


def _node(op, inputs, outputs, name, **attrs):
    return helper.make_node(op, inputs, outputs, name=name, domain=ops.DOMAIN, plugin_version=ops.V3_VERSION, **attrs)


def test_every_field_type_through_the_real_parser(tmp_path):
    """string, int, float and FP32 / FP16 / BF16 tensor weights; optional input and second output."""
    rng = np.random.default_rng(0)
    w = lambda dt: numpy_helper.from_array(rng.standard_normal(HIDDEN).astype(dt))  # noqa: E731
    nodes = [
        _node("BiasActivation", ["x"], ["a"], "bias_gelu", activation="gelu", bias=w(np.float16)),
        _node("SkipNorm", ["a", "skip"], ["y", "s"], "skip_layernorm", norm="layer", epsilon=1e-6, output_sum=1,
              gamma=w(np.float32), beta=_bf16(rng.standard_normal(HIDDEN)), bias=w(np.float16)),
        _node("SkipNorm", ["s"], ["z"], "rmsnorm", norm="rms", gamma=w(np.float32)),
        _node("BiasActivation", ["z"], ["out"], "relu", activation="relu"),
    ]
    plan = tmp_path / "fields.plan"
    s = rtx.build_engine(_model(nodes, ["x", "skip"], ["y", "out"]), plan)
    assert s["plugin_layers"] == ["bias_gelu", "skip_layernorm", "rmsnorm", "relu"]
    assert s["layers"] == {"PLUGIN_V3": 4} and s["backend"].startswith("TensorRT-RTX 1.")
    assert plan.stat().st_size == s["size"] > 0
    x = next(b for b in s["io"] if b["name"] == "x")
    assert x["profile"] == [[1, 1, HIDDEN], [4, 128, HIDDEN], [16, 512, HIDDEN]]  # trtplugins.engine's defaults


def test_substituted_demo_builds_with_one_plugin_layer_per_substitution(tmp_path):
    from trtplugins.demo import make_model
    from trtplugins.graph import substitute

    model, report = substitute(make_model(layers=2), plugin_api="v3")
    nodes = [n for n in model.graph.node if n.domain == ops.DOMAIN]
    assert len(nodes) == len(report.replaced) >= 4
    assert {a.s.decode() for n in nodes for a in n.attribute if a.name == "plugin_version"} == {ops.V3_VERSION}
    s = rtx.build_engine(model, tmp_path / "demo.plan")
    assert len(s["plugin_layers"]) == len(report.replaced)
    assert sorted(s["plugin_layers"]) == sorted(n.name for n in nodes)
    assert s["layers"]["MATRIX_MULTIPLY"] == 16


def test_substituted_unet_block_builds_with_group_norm_layers(tmp_path):
    """A UNet-style block (torch.onnx TorchScript export) with its 5 GroupNorms substituted: one
    GroupNorm plugin layer each (getWorkspaceSize, configurePlugin, serialization through the builder)."""
    torch = pytest.importorskip("torch", reason="the export needs torch (CPU build)")
    from test_group_norm_patterns import TinyUNet, export

    from trtplugins.graph import substitute

    torch.manual_seed(0)
    model = export(TinyUNet(), (torch.randn(2, 8, 6, 6), torch.randn(2, 8)), tmp_path / "unet.onnx", False, 17)
    model, report = substitute(model)
    nodes = [n for n in model.graph.node if n.domain == ops.DOMAIN]
    for n in nodes:
        for a in n.attribute:
            if a.name == "plugin_version":
                a.s = ops.V3_VERSION.encode()
    s = rtx.build_engine(model, tmp_path / "unet.plan")
    groups = [n.name for n in nodes if n.op_type == "GroupNorm"]
    assert len(groups) == 5 and set(groups) <= set(s["plugin_layers"])
    assert sorted(s["plugin_layers"]) == sorted(n.name for n in nodes) and s["layers"]["PLUGIN_V3"] == len(nodes)


def test_substituted_gated_units_build(tmp_path):
    """A GEGLU FeedForward (one input, its last dim halved by getOutputShapes through the real
    IExprBuilder) and LLaMA MLP blocks (two inputs), substituted with --ops GatedActivation."""
    torch = pytest.importorskip("torch", reason="the exports need torch (CPU build)")
    from test_gated_patterns import FeedForward, LlamaBlocks, export

    from trtplugins.graph import substitute

    for name, module, inputs in [("geglu", FeedForward("tanh"), 1), ("swiglu", LlamaBlocks(), 2)]:
        torch.manual_seed(0)
        model, report = substitute(export(module, tmp_path / f"{name}.onnx", 17, False), ["default", "GatedActivation"])
        gated = [n for n in model.graph.node if n.op_type == "GatedActivation"]
        assert gated and all(len(n.input) == inputs for n in gated)
        s = rtx.build_engine(model, tmp_path / f"{name}.plan")
        assert sorted(n.name for n in gated) == sorted(p for p in s["plugin_layers"] if p.startswith("GatedActivation"))
        assert s["layers"]["PLUGIN_V3"] == len(report.replaced)
        y = next(b for b in s["io"] if b["name"] == "y")
        assert y["shape"][-1] == 16  # the hidden size again, after the halved FFN


def test_bad_attributes_are_refused_with_the_creators_reason():
    nodes = [_node("SkipNorm", ["x"], ["y"], "bad_norm", norm="batch", gamma=numpy_helper.from_array(np.ones(HIDDEN, np.float32)))]
    with pytest.raises(rtx.RtxBuildError) as e:
        rtx.build_engine(_model(nodes, ["x"], ["y"]))
    assert "bad_norm" in str(e.value)


def test_version_1_nodes_are_refused_by_rtx():
    """V2 plugins (version "1") exist for TensorRT 10/11 engines; TensorRT-RTX imports V3 only."""
    n = helper.make_node("BiasActivation", ["x"], ["y"], name="v2_node", domain=ops.DOMAIN, activation="relu",
                         plugin_version=ops.V2_VERSION)
    with pytest.raises(rtx.RtxBuildError, match="IPluginV3"):
        rtx.build_engine(_model([n], ["x"], ["y"]))


def test_add_plugin_to_a_python_network():
    trt = rtx.rtx_module()
    if not hasattr(trt.INetworkDefinition, "add_plugin_v3"):
        pytest.skip(f"full TensorRT (module tensorrt) not installed, and TensorRT-RTX {trt.__version__}'s Python "
                    "INetworkDefinition has no add_plugin_v3: trtplugins.add_plugin needs one of the two")
