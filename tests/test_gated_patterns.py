"""GatedActivation substitution (issue 16 item 2): SwiGLU in a tiny LLaMA-like pre-norm block (HF's
LlamaMLP and LlamaRMSNorm) and a diffusers-like GEGLU FeedForward (erf and tanh GELU on the second
half of proj(x).chunk(2, -1)), exported by the TorchScript (opsets 14, 17, 20: Slices bounded by
Shape arithmetic, the opset-20 Gelu op) and dynamo (opset 18: Split) exporters; the forms onnx.helper
writes (Split sizes, constant Slices, the opset-24 Swish, ReGLU, biases) and the near-misses left.
Opt-in: the default run leaves every gated unit fed by a MatMul to TensorRT's GEMM epilogue with a
report entry; --ops names it. Counts and equality with ONNX Runtime (plugin nodes by the reference)."""

import numpy as np
import onnx
import pytest
from conftest import compare, plugin_attrs, plugin_nodes
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from trtplugins import ops
from trtplugins.ops import gated_activation
from trtplugins.graph import substitute

torch = pytest.importorskip("torch", reason="the exports need torch (CPU build)")
nn, F = torch.nn, torch.nn.functional
HIDDEN, FFN = 16, 24
EXPORTS = [(14, False), (17, False), (20, False), (18, True)]
IDS = ["ts14", "ts17", "ts20", "dynamo18"]
SHAPES = [(2, 5), (1, 3)]


def export(module, path, opset, dynamo):
    torch.manual_seed(0)
    x = torch.randn(2, 5, HIDDEN)
    if dynamo:
        dims = {"x": {0: torch.export.Dim.AUTO, 1: torch.export.Dim.AUTO}}
        torch.onnx.export(module.eval(), (x,), str(path), input_names=["x"], dynamo=True, opset_version=opset,
                          dynamic_shapes=dims)
    else:
        torch.onnx.export(module.eval(), (x,), str(path), input_names=["x"], output_names=["y"], dynamo=False,
                          opset_version=opset, dynamic_axes={"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}})
    return onnx.load(str(path))


class LlamaBlocks(nn.Module):
    """Two pre-norm MLP blocks of LLaMA: h = x + down(silu(gate(n(x))) * up(n(x)))."""

    def __init__(self, layers=2):
        super().__init__()
        from transformers import LlamaConfig
        from transformers.models.llama.modeling_llama import LlamaMLP, LlamaRMSNorm

        cfg = LlamaConfig(hidden_size=HIDDEN, intermediate_size=FFN, hidden_act="silu", num_attention_heads=2,
                          num_key_value_heads=2)
        self.norms = nn.ModuleList(LlamaRMSNorm(HIDDEN, eps=1e-6) for _ in range(layers))
        self.mlps = nn.ModuleList(LlamaMLP(cfg) for _ in range(layers))
        for n in self.norms:
            nn.init.normal_(n.weight, 1.0, 0.3)

    def forward(self, x):
        for norm, mlp in zip(self.norms, self.mlps):
            x = x + mlp(norm(x))
        return x


class GEGLU(nn.Module):
    """diffusers.models.activations.GEGLU: the gate is the second half."""

    def __init__(self, dim_in, dim_out, approximate="none"):
        super().__init__()
        self.proj, self.approximate = nn.Linear(dim_in, dim_out * 2), approximate

    def forward(self, x):
        hidden_states, gate = self.proj(x).chunk(2, dim=-1)
        return hidden_states * F.gelu(gate, approximate=self.approximate)


class FeedForward(nn.Module):
    """diffusers' FeedForward(dim, activation_fn="geglu"), with the residual of its transformer block."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.net = nn.ModuleList([GEGLU(HIDDEN, FFN, approximate), nn.Dropout(0.0), nn.Linear(FFN, HIDDEN)])

    def forward(self, x):
        h = x
        for m in self.net:
            h = m(h)
        return x + h


@pytest.mark.parametrize("opset,dynamo", EXPORTS, ids=IDS)
def test_llama_swiglu(tmp_path, opset, dynamo):
    pytest.importorskip("transformers", reason="the block uses HF's LlamaMLP")
    model = export(LlamaBlocks(), tmp_path / "m.onnx", opset, dynamo)
    out, report = substitute(model)  # default: the norms fused, the SwiGLUs left to the gate GEMM's epilogue
    assert len(plugin_nodes(out, "SkipNorm")) == 2 and not plugin_nodes(out, "GatedActivation"), str(report)
    assert [(r["pattern"], r["reason"]) for r in report.left] == [
        ("swiglu", "gated silu after MatMul: TensorRT fuses it into the MatMul epilogue (ask with --ops swiglu or --ops all)")] * 2
    assert sum(n.op_type == "Sigmoid" for n in out.graph.node) == 2  # nor fused as a lone BiasActivation
    out, report = substitute(model, ["default", "GatedActivation"])
    gated = plugin_nodes(out, "GatedActivation")
    assert len(gated) == 2 and len(plugin_nodes(out, "SkipNorm")) == 2, str(report)
    assert all(plugin_attrs(n) == {"activation": "silu", "plugin_version": ops.V3_VERSION} and len(n.input) == 2
               for n in gated)
    producers = {o: n.op_type for n in out.graph.node for o in n.output}
    assert all(producers[i] == "MatMul" for n in gated for i in n.input)
    assert not [n for n in out.graph.node if n.op_type in ("Sigmoid", "Mul")]
    assert [r["variant"] for r in report.replaced if r["plugin"] == "GatedActivation"] == ["silu"] * 2
    compare(model, out, SHAPES)
    only, _ = substitute(model, "GatedActivation")  # the op alone: the norms stay
    assert len(plugin_nodes(only, "GatedActivation")) == 2 and not plugin_nodes(only, "SkipNorm")


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("opset,dynamo", EXPORTS, ids=IDS)
def test_diffusers_geglu(tmp_path, opset, dynamo, approximate):
    model = export(FeedForward(approximate), tmp_path / "m.onnx", opset, dynamo)
    act = "gelu" if approximate == "none" else "gelu_tanh"
    pattern = "geglu_op" if opset >= 20 and not dynamo else "geglu_erf" if act == "gelu" else "geglu_tanh"
    out, report = substitute(model)
    assert not report.replaced and out.SerializeToString() == model.SerializeToString()  # untouched
    assert [(r["pattern"], r["reason"]) for r in report.left] == [
        (pattern, f"bias+gated {act} after MatMul: TensorRT fuses it into the MatMul epilogue "
                  f"(ask with --ops {pattern} or --ops all)")]
    for asked in ("GatedActivation", pattern, "all"):
        out, report = substitute(model, asked)
        (node,) = plugin_nodes(out)
        a = plugin_attrs(node)
        assert node.op_type == "GatedActivation" and a["activation"] == act and a["gate"] == "second", asked
        assert a["gate_bias"].shape == a["linear_bias"].shape == (FFN,) and len(node.input) == 1
        assert sorted(n.op_type for n in out.graph.node) == ["Add", "Add", "GatedActivation", "MatMul", "MatMul"]
        assert report.replaced[0]["variant"] == f"{act}+halves+bias"
    # proj's bias split in two: the gate (second) half and the linear (first) half
    bias = numpy_helper.to_array(next(i for i in model.graph.initializer if i.name.endswith("proj.bias")))
    np.testing.assert_array_equal(a["gate_bias"], bias[FFN:])
    np.testing.assert_array_equal(a["linear_bias"], bias[:FFN])
    compare(model, out, SHAPES)


@pytest.mark.parametrize("opset,dynamo", [(17, False), (18, True)], ids=["ts17", "dynamo18"])
def test_chunk_with_the_first_half_activated(tmp_path, opset, dynamo):
    class ChunkSwiglu(nn.Module):  # a fused gate_up projection, no bias
        def __init__(self):
            super().__init__()
            self.gate_up = nn.Linear(HIDDEN, 2 * FFN, bias=False)

        def forward(self, x):
            g, u = self.gate_up(x).chunk(2, -1)
            return F.silu(g) * u

    model = export(ChunkSwiglu(), tmp_path / "m.onnx", opset, dynamo)
    out, report = substitute(model, "swiglu")
    (node,) = plugin_nodes(out)
    assert plugin_attrs(node) == {"activation": "silu", "gate": "first", "plugin_version": ops.V3_VERSION}
    assert [n.op_type for n in out.graph.node] == ["MatMul", "GatedActivation"], str(report)
    compare(model, out, SHAPES)


def test_substitute_cli_ops_names_the_op(tmp_path):
    import json
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    import substitute_plugins

    src, dst, rep = tmp_path / "ff.onnx", tmp_path / "ff.plugins.onnx", tmp_path / "r.json"
    onnx.save(export(FeedForward(), tmp_path / "m.onnx", 17, False), src)
    assert substitute_plugins.main([str(src), "-o", str(dst), "--report", str(rep)]) == 0
    assert json.loads(rep.read_text())["plugins"] == {}
    assert substitute_plugins.main([str(src), "-o", str(dst), "--ops", "GatedActivation", "--report", str(rep)]) == 0
    assert json.loads(rep.read_text())["plugins"] == {"GatedActivation": 1}
    assert [n.op_type for n in plugin_nodes(onnx.load(dst))] == ["GatedActivation"]


# --- onnx.helper forms ---------------------------------------------------------------------

W = 8
RNG = np.random.default_rng(0)


def _model(nodes, inits, inputs=(("x", [None, None, 2 * W]),), out_dims=(None, None, W), opset=17, elem=T.FLOAT):
    ins = [h.make_tensor_value_info(n, elem, d) for n, d in inputs]
    g = h.make_graph(nodes, "g", ins, [h.make_tensor_value_info("y", elem, list(out_dims))], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    onnx.checker.check_model(m, full_check=True)
    return m


def _init(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def _silu(src, out):
    return [h.make_node("Sigmoid", [src], [out + "_s"]), h.make_node("Mul", [out + "_s", src], [out])]


def test_two_inputs_with_biases_and_the_linear_first():
    """(b + cb) * silu(a + ca): the biases folded per operand, the gate the first plugin input."""
    nodes = [h.make_node("Add", ["a", "ca"], ["a1"]), h.make_node("Add", ["cb", "b"], ["b1"])] + _silu("a1", "act") + [
        h.make_node("Mul", ["b1", "act"], ["y"])]
    inputs = (("a", ["n", W]), ("b", ["n", W]))
    model = _model(nodes, [_init("ca", RNG.normal(size=W)), _init("cb", RNG.normal(size=(1, W)))], inputs, ["n", W])
    out, report = substitute(model)  # fed by graph inputs: fused by default
    (node,) = plugin_nodes(out)
    assert list(node.input) == ["a", "b"] and len(out.graph.node) == 1 and report.replaced[0]["variant"] == "silu+bias"
    a = plugin_attrs(node)
    assert a["activation"] == "silu" and a["gate_bias"].shape == a["linear_bias"].shape == (W,)
    compare(model, out, [(3,), (1,)])


@pytest.mark.parametrize("form", ["split-sizes", "split-13-attr", "slices"])
def test_halves_written_by_hand(form):
    """Split with sizes as input (opset 13+) or, at opset 11, as attribute; constant Slices; ReGLU on
    the first half."""
    opset = 11 if form == "split-13-attr" else 17
    inits = []
    if form == "slices":
        inits = [_init(n, v, np.int64) for n, v in (("s0", [0]), ("e0", [W]), ("s1", [W]), ("e1", [2**62]), ("ax", [-1]))]
        nodes = [h.make_node("Slice", ["x", "s0", "e0", "ax"], ["g"]), h.make_node("Slice", ["x", "s1", "e1", "ax"], ["u"])]
    elif form == "split-sizes":
        inits = [_init("sizes", [W, W], np.int64)]
        nodes = [h.make_node("Split", ["x", "sizes"], ["g", "u"], axis=2)]
    else:
        nodes = [h.make_node("Split", ["x"], ["g", "u"], axis=-1, split=[W, W])]
    nodes += [h.make_node("Relu", ["g"], ["r"]), h.make_node("Mul", ["r", "u"], ["y"])]
    model = _model(nodes, inits, opset=opset)
    out, report = substitute(model)
    (node,) = plugin_nodes(out)
    assert node.op_type == "GatedActivation" and list(node.input) == ["x"] and len(out.graph.node) == 1, str(report)
    assert plugin_attrs(node)["activation"] == "relu" and plugin_attrs(node)["gate"] == "first"
    compare(model, out, SHAPES)


def test_swish_op_spelling():
    """The opset-24 Swish (alpha 1) is SiLU; another alpha is no SiLU."""
    for alpha, fused in ((1.0, True), (1.5, False)):
        nodes = [h.make_node("Swish", ["a"], ["s"], alpha=alpha), h.make_node("Mul", ["s", "b"], ["y"])]
        model = _model(nodes, [], (("a", ["n", W]), ("b", ["n", W])), ["n", W], opset=24)
        out, report = substitute(model)
        assert bool(plugin_nodes(out, "GatedActivation")) == fused, str(report)
        if fused:
            compare(model, out, [(3,)])


def test_near_misses_are_left():
    inputs = (("a", ["n", W]), ("b", ["n", W]))
    # act * constant: no gate, and the lone SiLU is BiasActivation's
    model = _model(_silu("a", "act") + [h.make_node("Mul", ["act", "k"], ["y"])], [_init("k", 2.0)], inputs[:1], ["n", W])
    out, _ = substitute(model)
    assert not plugin_nodes(out, "GatedActivation")
    # a broadcast product: reported
    nodes = _silu("a", "act") + [h.make_node("Mul", ["act", "b"], ["y"])]
    model = _model(nodes, [], (("a", ["n", W]), ("b", [1, W])), ["n", W])
    out, report = substitute(model)
    assert not plugin_nodes(out, "GatedActivation")
    assert any(r["pattern"] == "swiglu" and "differ in shape" in r["reason"] for r in report.left)


@pytest.mark.parametrize("case", ["half used elsewhere", "split along another axis", "one half twice"])
def test_split_parts_as_two_inputs(case):
    """Split outputs the match cannot take as halves (one also used outside it, not of the last dim, or
    the same half as both operands): the Split stays and the plugin takes them as its two inputs."""
    axis, dims, out_dims = (1, [None, 2, W], (None, 1, W)) if case == "split along another axis" else (
        -1, [None, None, 2 * W], (None, None, W))
    linear = "g" if case == "one half twice" else "u"
    nodes = [h.make_node("Split", ["x"], ["g", "u"], axis=axis, num_outputs=2)] + _silu("g", "act") + [
        h.make_node("Mul", ["act", linear], ["p"])]
    last = {"half used elsewhere": h.make_node("Add", ["p", "u"], ["y"]), "one half twice": h.make_node("Sub", ["p", "u"], ["y"])}
    nodes.append(last.get(case, h.make_node("Identity", ["p"], ["y"])))
    model = _model(nodes, [], (("x", dims),), out_dims, opset=18)
    out, _ = substitute(model)
    (node,) = plugin_nodes(out)
    assert list(node.input) == ["g", linear] and [n.op_type for n in out.graph.node][:2] == ["Split", "GatedActivation"]
    compare(model, out, [(2,)] if case == "split along another axis" else SHAPES)


def test_fp16_graph():
    nodes = [h.make_node("Split", ["x"], ["g", "u"], axis=-1, num_outputs=2)] + _silu("g", "act") + [
        h.make_node("Mul", ["u", "act"], ["y"])]
    model = _model(nodes, [], opset=18, elem=T.FLOAT16)
    out, _ = substitute(model)
    assert [n.op_type for n in out.graph.node] == ["GatedActivation"]
    compare(model, out, SHAPES, rtol=2e-3, atol=2e-3)


# --- the reference itself ------------------------------------------------------------------


@pytest.mark.parametrize("act", ops.GATED_ACTIVATIONS)
def test_reference_matches_torch(act):
    x = RNG.standard_normal((3, 5, 2 * W)) * 3
    gb, lb = RNG.standard_normal(W), RNG.standard_normal(W)
    fn = {"silu": F.silu, "gelu": F.gelu, "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "relu": F.relu}[act]
    t = torch.from_numpy(x)
    for gate in ("first", "second"):
        g, lin = t.chunk(2, -1)[::1 if gate == "first" else -1]
        want = fn(g + torch.from_numpy(gb)) * (lin + torch.from_numpy(lb))
        got = gated_activation.reference(x, activation_name=act, gate=gate, gate_bias=gb, linear_bias=lb)
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-12)
        got2 = gated_activation.reference(*np.split(x, 2, -1), activation_name=act, gate=gate, gate_bias=gb, linear_bias=lb)
        np.testing.assert_array_equal(got, got2)
    with pytest.raises(ValueError, match="odd last dim"):
        gated_activation.reference(x[..., 1:], activation_name=act)
    with pytest.raises(ValueError, match="x2 has shape"):
        gated_activation.reference(x, x[:1], activation_name=act)
    with pytest.raises(ValueError, match="unknown activation"):
        gated_activation.reference(x, activation_name="quick_gelu")
