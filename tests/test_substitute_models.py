"""Substitution on real tiny exports (HF transformers, MobileNetV2-style block, RMSNorm
blocks, MLPs): exact fusion counts and numerical equality with ONNX Runtime."""

import json

import onnx
import pytest
from conftest import compare, plugin_attrs, plugin_nodes

from trtplugins import ops
from trtplugins.graph import substitute
from trtplugins.graph.export import LAYERS

EXPORTERS = [(14, False), (17, False), (20, False), (18, True)]
IDS = ["ts14", "ts17", "ts20", "dynamo18"]
SHAPES = [(2, 8), (1, 5), (3, 13)]
REPORTS = {}  # printed by test_print_reports


def _ids(x):
    return x if isinstance(x, str) else None


def check_model(original, out):
    onnx.checker.check_model(out, full_check=True)
    assert any(o.domain == ops.DOMAIN for o in out.opset_import)
    assert [o.name for o in out.graph.output] == [o.name for o in original.graph.output]
    for a, b in zip(original.graph.output, out.graph.output):
        assert a.type == b.type  # output shapes/dtypes preserved
    used = {i for n in out.graph.node for i in n.input}
    assert all(t.name in used for t in out.graph.initializer)  # unused initializers dropped
    again, report = substitute(out)
    assert not report.replaced and again.SerializeToString() == out.SerializeToString()  # idempotent


def check_attrs(node):
    spec = ops.spec(node.op_type)
    kinds = {"string": onnx.AttributeProto.STRING, "float": onnx.AttributeProto.FLOAT,
             "int": onnx.AttributeProto.INT, "weights": onnx.AttributeProto.TENSOR}
    names = {a.name for a in node.attribute}
    assert names - {f.name for f in spec.fields} == {"plugin_version"}
    assert {f.name for f in spec.fields if f.required} <= names
    for a in node.attribute:
        if a.name == "plugin_version":
            assert a.type == onnx.AttributeProto.STRING and a.s == ops.VERSIONS[ops.DEFAULT_API].encode()
            continue
        assert a.type == kinds[spec.field(a.name).kind], a.name
        if a.type == onnx.AttributeProto.TENSOR:
            assert a.t.data_type == onnx.TensorProto.FLOAT and len(a.t.dims) == 1


@pytest.mark.parametrize("kind", ["bert", "roberta", "albert", "electra"])
@pytest.mark.parametrize("opset,dynamo", EXPORTERS, ids=IDS)
def test_hf_encoder(exported, kind, opset, dynamo):
    model = exported(kind, opset, dynamo)
    before = model.SerializeToString()
    out, report = substitute(model)
    assert model.SerializeToString() == before  # input untouched
    check_model(model, out)
    # one skip+norm per residual (2 per layer), each with the Linear bias folded in, + the
    # embedding sum (word + token type: full shape, then + position embeddings: [1,S,H] or
    # [B,S,H] in RoBERTa) folded as a skip that broadcasts over leading dims
    skip = [n for n in plugin_nodes(out, "SkipNorm") if len(n.input) == 2]
    residual = [n for n in skip if "bias" in plugin_attrs(n)]
    assert len(residual) == 2 * LAYERS
    assert len(skip) == 2 * LAYERS + 1 and len(plugin_nodes(out, "SkipNorm")) == len(skip)
    # the bias+GELU after the first MatMul of each FFN is left to TensorRT's GEMM epilogue
    # by default (ALBERT's default is gelu_new: the tanh form), fused with --ops all
    assert not plugin_nodes(out, "BiasActivation")
    gelu = "gelu_tanh" if kind == "albert" else "gelu_op" if opset >= 20 else "gelu_erf"
    assert [r["reason"] for r in report.left if r["pattern"] == gelu] == [
        f"bias+{'gelu_tanh' if kind == 'albert' else 'gelu'} after MatMul: TensorRT fuses it into the MatMul epilogue "
        f"(ask with --ops {gelu} or --ops all)"] * LAYERS
    out, _ = substitute(model, "all")
    act = plugin_nodes(out, "BiasActivation")
    assert len(act) == LAYERS
    assert {plugin_attrs(n)["activation"] for n in act} == {"gelu_tanh" if kind == "albert" else "gelu"}
    assert all("bias" in plugin_attrs(n) for n in act)
    for n in plugin_nodes(out):
        check_attrs(n)
    assert all(plugin_attrs(n)["output_sum"] == 0 for n in plugin_nodes(out, "SkipNorm"))
    worst = compare(model, out, SHAPES)
    REPORTS[f"{kind}/{IDS[EXPORTERS.index((opset, dynamo))]}"] = (report, worst)


@pytest.mark.parametrize("kind", ["t5_rms", "llama_rms"])
@pytest.mark.parametrize("opset,dynamo", EXPORTERS, ids=IDS)
def test_rms_blocks(exported, kind, opset, dynamo):
    model = exported(kind, opset, dynamo)
    out, report = substitute(model)
    check_model(model, out)
    norms = plugin_nodes(out, "SkipNorm")
    assert len(norms) == 2 and all(plugin_attrs(n)["norm"] == "rms" for n in norms)
    first, second = sorted(norms, key=lambda n: len(n.input))
    assert len(first.input) == 1 and plugin_attrs(first)["output_sum"] == 0
    # h = x + W1 n1(x) feeds n2 and the last Add: the sum comes out as the second output
    assert len(second.input) == 2 and plugin_attrs(second)["output_sum"] == 1 and len(second.output) == 2
    assert "bias" in plugin_attrs(second)
    assert abs(plugin_attrs(first)["epsilon"] - 1e-6) < 1e-12
    assert not [n for n in out.graph.node if n.op_type in ("ReduceMean", "Pow", "Sqrt", "Div", "Reciprocal")]
    REPORTS[f"{kind}/{IDS[EXPORTERS.index((opset, dynamo))]}"] = (report, compare(model, out, SHAPES))


ACTIVATIONS = {"relu": "relu", "relu6": "relu6", "gelu": "gelu", "gelu_new": "gelu_tanh",
               "gelu_pytorch_tanh": "gelu_tanh", "silu": "silu", "quick_gelu": "quick_gelu", "hardswish": "hard_swish"}


@pytest.mark.parametrize("act", ACTIVATIONS)
@pytest.mark.parametrize("opset,dynamo", [EXPORTERS[0], EXPORTERS[2], EXPORTERS[3]], ids=[IDS[0], IDS[2], IDS[3]])
def test_mlp_bias_activation(exported, act, opset, dynamo):
    model = exported("mlp", opset, dynamo, act)
    out, report = substitute(model)  # Linear -> act: left to the GEMM epilogue by default
    assert not report.replaced and len(report.left) == 1
    assert f"bias+{ACTIVATIONS[act]} after MatMul: TensorRT fuses it into the MatMul epilogue" in report.left[0]["reason"]
    out, report = substitute(model, ["all"])
    check_model(model, out)
    (node,) = plugin_nodes(out)
    attrs = plugin_attrs(node)
    assert node.op_type == "BiasActivation" and attrs["activation"] == ACTIVATIONS[act] and "bias" in attrs
    assert sorted(n.op_type for n in out.graph.node) == ["Add", "BiasActivation", "MatMul", "MatMul"]
    check_attrs(node)
    REPORTS[f"mlp-{act}/{IDS[EXPORTERS.index((opset, dynamo))]}"] = (report, compare(model, out, SHAPES))


@pytest.mark.parametrize("opset,dynamo", EXPORTERS, ids=IDS)
def test_mobilenet_relu6_policy(exported, opset, dynamo):
    """Conv-BN-ReLU6 inverted residual (torchvision's block in plain torch): a lone Clip
    after Conv is left to TensorRT by default, replaced when asked for."""
    model = exported("mobilenet_v2_block", opset, dynamo)
    out, report = substitute(model)
    assert not report.replaced and out.SerializeToString() == model.SerializeToString()
    assert [r["pattern"] for r in report.left] == ["relu6"] * 3
    assert all("relu6 after Conv: TensorRT fuses it into the Conv epilogue" in r["reason"] for r in report.left)
    forced, report = substitute(model, ["relu6"])
    check_model(model, forced)
    nodes = plugin_nodes(forced)
    assert len(nodes) == 3 and all(plugin_attrs(n) == {"activation": "relu6", "plugin_version": ops.V3_VERSION} for n in nodes)
    assert not [n for n in forced.graph.node if n.op_type == "Clip"]
    REPORTS[f"mobilenet_v2_block --ops relu6/{IDS[EXPORTERS.index((opset, dynamo))]}"] = (
        report, compare(model, forced, [(2, 16, 16), (1, 9, 12), (3, 8, 8)]))


def test_report_json(exported):
    _, report = substitute(exported("bert", 17))
    d = json.loads(report.json())
    assert d["plugins"] == {"SkipNorm": 5}
    assert d["patterns"]["layer_norm_op"]["matches"] == 5 and d["candidates"] == 2  # the 2 Erf, left to the epilogue
    assert "layer_norm_op" in str(report) and "left   2 x gelu_erf: bias+gelu after MatMul" in str(report)
    _, report = substitute(exported("bert", 17), "all")
    assert json.loads(report.json())["patterns"]["gelu_erf"]["nodes_removed"] == 12


def test_print_reports(capsys):
    """Summary table of the runs above (shown with -s or in the junit log)."""
    with capsys.disabled():
        for name, (report, worst) in sorted(REPORTS.items()):
            counts = ", ".join(f"{k}:{v['matches']}/{v['nodes_removed']}" for k, v in report.counts().items())
            print(f"\n{name:<40} nodes {report.nodes_before:>4}->{report.nodes_after:<4} {counts:<60} max|diff| {worst:.2e}")
