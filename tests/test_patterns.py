"""Each pattern on small hand-built graphs: the forms exporters emit less often (operand
orders, Constant nodes, Min/Max ReLU6, decomposed HardSwish, ReduceMean axes as input,
Reciprocal RMSNorm), and every guard leaving a near-miss unchanged with a reason."""

import math

import numpy as np
import onnx
import pytest
from conftest import compare, plugin_attrs, plugin_nodes
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from trtplugins.graph import substitute
from trtplugins.ops import skip_norm

H = 16
RNG = np.random.default_rng(0)


class G:
    """Tiny graph builder: x [batch, seq, H] in, y out; constants as initializers or
    Constant nodes."""

    def __init__(self, opset=17, const_nodes=False):
        self.nodes, self.inits, self.opset, self.const_nodes, self.k = [], [], opset, const_nodes, 0

    def c(self, value, dtype=None):
        self.k += 1
        name = f"c{self.k}"
        arr = np.asarray(value, dtype or (np.float32 if np.asarray(value).dtype.kind == "f" else np.int64))
        if self.const_nodes:
            self.nodes.append(h.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name)))
        else:
            self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def op(self, op, *inputs, **attrs):
        self.k += 1
        out = f"t{self.k}"
        self.nodes.append(h.make_node(op, list(inputs), [out], name=f"n{self.k}", **attrs))
        return out

    def model(self, *outputs, inputs=("x",), shapes=None, elem=T.FLOAT, out_shape=("batch", "seq", H), check=True):
        """shapes: input name -> dims, or (elem type, dims); elem: the other inputs' and the outputs' type."""
        shapes = shapes or {}
        outs = [h.make_tensor_value_info(o, elem, out_shape) for o in outputs]
        ins = []
        for i in inputs:
            dims = shapes.get(i, ["batch", "seq", H])
            ins.append(h.make_tensor_value_info(i, *(dims if isinstance(dims, tuple) else (elem, dims))))
        g = h.make_graph(self.nodes, "g", ins, outs, self.inits)
        m = h.make_model(g, opset_imports=[h.make_opsetid("", self.opset)])
        if check:
            onnx.checker.check_model(m, full_check=True)
        return m


SHAPES = [(2, 5), (1, 3), (3, 7)]


def run(model, ops=None, replaced=1):
    out, report = substitute(model, ops)
    assert len(report.replaced) == replaced, str(report)
    if replaced:
        compare(model, out, SHAPES)
    return out, report


def bias_act(g, build):
    """build(x + bias), x a scaled input: not a MatMul, whose epilogue TensorRT fuses the
    activation into (that policy is tested apart)."""
    mm = g.op("Mul", "x", g.c(RNG.standard_normal(H)))
    b = g.c(RNG.standard_normal(H))
    return build(g.op("Add", b, mm))


# --- activations ---------------------------------------------------------------

def gelu_erf(g, x, div=True, order=0, half=0.5):
    s = g.op("Div", x, g.c(math.sqrt(2))) if div else g.op("Mul", g.c(1 / math.sqrt(2)), x)
    a = g.op("Add", g.c(1.0), g.op("Erf", s))
    if order == 0:  # (x * a) * 0.5
        return g.op("Mul", g.op("Mul", x, a), g.c(half))
    if order == 1:  # x * (0.5 * a)
        return g.op("Mul", x, g.op("Mul", g.c(half), a))
    return g.op("Mul", a, g.op("Mul", x, g.c(half)))  # a * (x * 0.5)


@pytest.mark.parametrize("const_nodes", [False, True], ids=["initializers", "Constant-nodes"])
@pytest.mark.parametrize("div", [True, False], ids=["div-sqrt2", "mul-rsqrt2"])
@pytest.mark.parametrize("order", [0, 1, 2])
def test_gelu_erf_forms(const_nodes, div, order):
    g = G(const_nodes=const_nodes)
    y = bias_act(g, lambda x: gelu_erf(g, x, div, order))
    out, _ = run(g.model(y))
    (node,) = plugin_nodes(out)
    assert plugin_attrs(node)["activation"] == "gelu" and plugin_attrs(node)["bias"].shape == (H,)
    assert [n.op_type for n in out.graph.node if n.op_type != "Constant"] == ["Mul", "BiasActivation"]


def test_gelu_guard_wrong_constant():
    g = G()
    y = gelu_erf(g, "x", half=0.49)
    m = g.model(y)
    out, report = run(m, replaced=0)
    assert out.SerializeToString() == m.SerializeToString()
    assert report.left[0]["pattern"] == "gelu_erf" and "0.49" in report.left[0]["reason"]


@pytest.mark.parametrize("cube", ["pow", "mul"])
def test_gelu_tanh_forms(cube):
    g = G(const_nodes=True)

    def gelu(x):
        x3 = g.op("Pow", x, g.c(3.0)) if cube == "pow" else g.op("Mul", g.op("Mul", x, x), x)
        inner = g.op("Mul", g.c(math.sqrt(2 / math.pi)), g.op("Add", x, g.op("Mul", x3, g.c(0.044715))))
        return g.op("Mul", g.op("Mul", g.c(0.5), x), g.op("Add", g.op("Tanh", inner), g.c(1.0)))

    out, _ = run(g.model(bias_act(g, gelu)))
    assert plugin_attrs(plugin_nodes(out)[0])["activation"] == "gelu_tanh"


def test_division_by_zero_constant_is_left_alone():
    """a * (x / 0) is no GELU, and matching it must not raise."""
    g = G()
    a = g.op("Add", g.c(1.0), g.op("Erf", g.op("Div", "x", g.c(math.sqrt(2)))))
    m = g.model(g.op("Mul", a, g.op("Div", "x", g.c(0.0))))
    out, _ = run(m, replaced=0)
    assert out.SerializeToString() == m.SerializeToString()


def test_gelu_tanh_per_channel_coefficient_is_not_gelu():
    """A cubic coefficient that is a vector starting with 0.044715 is not GELU: nothing fused."""
    g = G()
    coef = np.full(H, 0.5, np.float32)
    coef[0] = 0.044715
    x = "x"
    x3 = g.op("Pow", x, g.c(3.0))
    inner = g.op("Mul", g.c(math.sqrt(2 / math.pi)), g.op("Add", x, g.op("Mul", x3, g.c(coef))))
    y = g.op("Mul", g.op("Mul", g.c(0.5), x), g.op("Add", g.op("Tanh", inner), g.c(1.0)))
    m = g.model(y)
    out, _ = run(m, ops=["gelu_tanh"], replaced=0)
    assert out.SerializeToString() == m.SerializeToString()


@pytest.mark.parametrize("approximate,expected", [("none", "gelu"), ("tanh", "gelu_tanh")])
def test_gelu_op(approximate, expected):
    g = G(opset=20)
    m = g.model(g.op("Gelu", "x", approximate=approximate))
    _, report = run(m, replaced=0)  # a lone native op is left by default
    assert "single Gelu op" in report.left[0]["reason"]
    out, _ = run(m, ["gelu_op"])
    assert plugin_attrs(plugin_nodes(out)[0])["activation"] == expected


@pytest.mark.parametrize("form", ["clip", "clip-attrs", "min-max", "max-min"])
def test_relu6_forms(form):
    g = G(opset=10 if form == "clip-attrs" else 17)
    if form == "clip":
        y = g.op("Clip", "x", g.c(0.0), g.c(6.0))
    elif form == "clip-attrs":
        y = g.op("Clip", "x", min=0.0, max=6.0)
    elif form == "min-max":
        y = g.op("Min", g.op("Max", "x", g.c(0.0)), g.c(6.0))
    else:
        y = g.op("Max", g.c(0.0), g.op("Min", g.c(6.0), "x"))
    m = g.model(y)
    _, report = run(m, replaced=0)
    if form == "clip-attrs":  # opset 10: converted to 13 (Clip bounds become inputs) and said so
        assert report.notes == ["converted opset 10 -> 13 with onnx.version_converter (opset 10 < 13)"]
    assert "lone relu6 after graph input" in report.left[0]["reason"]
    out, _ = run(m, ["relu6"])
    assert plugin_attrs(plugin_nodes(out)[0])["activation"] == "relu6"


def test_relu6_guard_wrong_bound():
    g = G()
    _, report = run(g.model(g.op("Clip", "x", g.c(0.0), g.c(5.0))), ["relu6"], replaced=0)
    assert "Clip bounds (0, 5)" in report.left[0]["reason"]


def test_bias_relu_default_and_lone_relu():
    g = G()
    out, _ = run(g.model(bias_act(g, lambda x: g.op("Relu", x))))
    assert plugin_attrs(plugin_nodes(out)[0])["activation"] == "relu"
    g = G()
    _, report = run(g.model(g.op("Relu", "x")), replaced=0)
    assert report.left[0]["pattern"] == "relu"


@pytest.mark.parametrize("form", ["op", "hardsigmoid", "clip-div", "minmax-mul"])
def test_hard_swish_forms(form):
    g = G()

    def hs(x):
        if form == "op":
            return g.op("HardSwish", x)
        if form == "hardsigmoid":
            return g.op("Mul", x, g.op("HardSigmoid", x, alpha=1 / 6, beta=0.5))
        shifted = g.op("Add", x, g.c(3.0))
        if form == "clip-div":
            return g.op("Div", g.op("Mul", x, g.op("Clip", shifted, g.c(0.0), g.c(6.0))), g.c(6.0))
        r6 = g.op("Min", g.op("Max", shifted, g.c(0.0)), g.c(6.0))
        return g.op("Mul", g.op("Mul", r6, g.c(1 / 6)), x)

    out, _ = run(g.model(bias_act(g, hs)))
    assert plugin_attrs(plugin_nodes(out)[0])["activation"] == "hard_swish"
    assert [n.op_type for n in out.graph.node if n.op_type != "Constant"] == ["Mul", "BiasActivation"]


def test_hard_sigmoid_guard_default_alpha():
    g = G()
    _, report = run(g.model(g.op("Mul", "x", g.op("HardSigmoid", "x"))), replaced=0)
    assert "alpha=0.2" in report.left[0]["reason"]


@pytest.mark.parametrize("act,k", [("silu", None), ("quick_gelu", 1.702)])
def test_sigmoid_gates(act, k):
    g = G()

    def gate(x):
        s = g.op("Sigmoid", x if k is None else g.op("Mul", g.c(k), x))
        return g.op("Mul", s, x)

    out, _ = run(g.model(bias_act(g, gate)))
    assert plugin_attrs(plugin_nodes(out)[0])["activation"] == act


def test_bias_not_folded_when_shared():
    """The biased tensor also feeds another node: the activation alone is replaced."""
    g = G()
    x = g.op("Add", "x", g.c(RNG.standard_normal(H)))
    y = gelu_erf(g, x)
    out, _ = run(g.model(y, x))
    assert "bias" not in plugin_attrs(plugin_nodes(out)[0])


# --- norms ---------------------------------------------------------------------

def layer_norm(g, x, eps=1e-5, axes=(-1,), gamma=True, beta=True, square="pow", gamma_shape=(H,)):
    def mean(t):
        if g.opset >= 18:
            return g.op("ReduceMean", t, g.c(np.array(axes, np.int64)))
        return g.op("ReduceMean", t, axes=list(axes))

    d = g.op("Sub", x, mean(x))
    sq = g.op("Pow", d, g.c(2.0)) if square == "pow" else g.op("Mul", d, d)
    y = g.op("Div", d, g.op("Sqrt", g.op("Add", mean(sq), g.c(eps))))
    if gamma:
        y = g.op("Mul", g.c(RNG.standard_normal(gamma_shape).astype(np.float32)), y)
    if beta:
        y = g.op("Add", y, g.c(RNG.standard_normal(H)))
    return y


@pytest.mark.parametrize("opset", [13, 18], ids=["axes-attr", "axes-input"])
@pytest.mark.parametrize("square", ["pow", "mul"])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_decomposed(opset, square, affine):
    g = G(opset=opset)
    out, _ = run(g.model(layer_norm(g, "x", 1e-3, square=square, gamma=affine, beta=affine)))
    (node,) = plugin_nodes(out)
    a = plugin_attrs(node)
    assert a["norm"] == "layer" and abs(a["epsilon"] - 1e-3) < 1e-9 and ("beta" in a) == affine
    assert np.array_equal(a["gamma"], np.ones(H, np.float32)) != affine


@pytest.mark.parametrize("axes", [(1,), (-2, -1)])
def test_layer_norm_guard_axes(axes):
    g = G()
    _, report = run(g.model(layer_norm(g, "x", axes=axes)), replaced=0)


def test_layer_norm_guard_gamma_shape():
    g = G()
    _, report = run(g.model(layer_norm(g, "x", gamma_shape=(1,))), replaced=0)
    assert any("gamma has shape [1]" in r["reason"] for r in report.left)


def test_layer_norm_op_guard_axis():
    g = G()
    y = g.op("LayerNormalization", g.op("Add", "x", "s"), g.c(np.ones((7, H))), axis=1)
    _, report = run(g.model(y, inputs=("x", "s")), replaced=0)
    assert "axis 1" in report.left[0]["reason"]


def residual(g, norm, bias=True, keep_sum=False, broadcast=False):
    mm = g.op("MatMul", "x", g.c(RNG.standard_normal((H, H)) / 4))
    lin = g.op("Add", mm, g.c(RNG.standard_normal(H))) if bias else mm
    skip = g.op("Mul", "x", g.c(np.ones((1, 1, H), np.float32) * 0.5)) if not broadcast else "p"
    s = g.op("Add", skip, lin)
    y = norm(s)
    return (y, g.op("Add", s, y)) if keep_sum else (y,)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("keep_sum", [True, False])
def test_skip_layer_norm(bias, keep_sum):
    g = G()
    outs = residual(g, lambda s: g.op("LayerNormalization", s, g.c(RNG.standard_normal(H)), g.c(RNG.standard_normal(H)), epsilon=1e-6), bias, keep_sum)
    out, _ = run(g.model(*outs))
    (node,) = plugin_nodes(out)
    a = plugin_attrs(node)
    assert len(node.input) == 2 and ("bias" in a) == bias and a["output_sum"] == int(keep_sum)
    assert len(node.output) == 1 + keep_sum


@pytest.mark.parametrize("shape,folded", [
    ([1, 5, H], True), ([5, H], True), ([1, 1, H], True),  # leading-dim broadcasts: the plugin repeats skip rows
    (["batch", 1, H], False),  # broadcast over a middle dim: not a skip the plugin takes
], ids=["1-S-H", "S-H", "1-1-H", "B-1-H"])
def test_skip_broadcast_over_leading_dims(shape, folded):
    """Embeddings + position embeddings (ViT, CLIP, Whisper): [B,S,H] + [1,S,H] or [S,H]."""
    g = G()
    (y,) = residual(g, lambda s: layer_norm(g, s), broadcast=True)
    model = g.model(y, inputs=("x", "p"), shapes={"x": ["batch", 5, H], "p": shape})
    out, report = run(model)
    (node,) = plugin_nodes(out)
    if folded:  # x (full shape) first, the broadcast skip second
        assert list(node.input)[1] == "p" and report.replaced[0]["variant"] == "layer+skip(broadcast)+bias"
    else:
        assert len(node.input) == 1 and report.replaced[0]["variant"] == "layer+no-skip(broadcast Add)"


def test_reference_broadcast_skip():
    """The plugin's contract: row r of x takes skip row r % skip_rows; the sum has x's shape."""
    x, skip = RNG.standard_normal((2, 3, H)).astype(np.float32), RNG.standard_normal((3, H)).astype(np.float32)
    kw = {"gamma": RNG.standard_normal(H), "output_sum": True}
    for s in (skip, skip[None]):
        y, total = skip_norm.reference(x, s, **kw)
        y_full, total_full = skip_norm.reference(x, np.broadcast_to(skip, x.shape), **kw)
        assert total.shape == x.shape and np.array_equal(y, y_full) and np.array_equal(total, total_full)
    with pytest.raises(ValueError, match="nor broadcasts over its leading dims"):
        skip_norm.reference(x, skip[:2], **kw)
    for x0, s0 in (((0, H), (0, H)), ((0, 3, H), (3, H))):  # no rows (the GPU tests' empty batch)
        y, total = skip_norm.reference(np.zeros(x0, np.float32), np.zeros(s0, np.float32), **kw)
        assert y.shape == total.shape == x0
    y, total = skip_norm.reference(np.ones((1, 1)), np.ones((1, 1)), gamma=np.ones(1), output_sum=True)  # hidden 1
    assert y.shape == (1, 1) and total[0, 0] == 2


def test_skip_broadcast_constant_position_embedding():
    """ViT: the position embedding is an initializer [1, S, H]; a constant of one row stays a bias."""
    g = G()
    pos = g.c(RNG.standard_normal((1, 5, H)))
    y = layer_norm(g, g.op("Add", "x", pos))
    out, report = run(g.model(y, inputs=("x",), shapes={"x": ["batch", 5, H]}), replaced=1)
    assert report.replaced[0]["variant"] == "layer+skip(broadcast)"
    assert plugin_nodes(out)[0].input[1] == pos


@pytest.mark.parametrize("form", ["div", "reciprocal", "one-div"])
def test_rms_norm_forms(form):
    g = G(opset=18)

    def rms(s):
        var = g.op("ReduceMean", g.op("Pow", s, g.c(2.0)), g.c(np.array([-1], np.int64)))
        std = g.op("Sqrt", g.op("Add", var, g.c(1e-6)))
        if form == "div":
            y = g.op("Div", s, std)
        else:
            inv = g.op("Reciprocal", std) if form == "reciprocal" else g.op("Div", g.c(1.0), std)
            y = g.op("Mul", s, inv)
        return g.op("Mul", g.c(RNG.standard_normal(H)), y)

    out, _ = run(g.model(*residual(g, rms, keep_sum=True)))
    (node,) = plugin_nodes(out)
    assert plugin_attrs(node)["norm"] == "rms" and plugin_attrs(node)["output_sum"] == 1


def test_rms_guard_epsilon_zero():
    g = G(opset=18)
    var = g.op("ReduceMean", g.op("Mul", "x", "x"), g.c(np.array([-1], np.int64)))
    y = g.op("Div", "x", g.op("Sqrt", g.op("Add", var, g.c(0.0))))
    _, report = run(g.model(y), replaced=0)
    assert "epsilon 0.0" in report.left[0]["reason"]


def test_intermediate_used_outside():
    g = G()
    d = g.op("Div", "x", g.c(math.sqrt(2)))
    a = g.op("Add", g.c(1.0), g.op("Erf", d))
    y = g.op("Mul", g.op("Mul", "x", a), g.c(0.5))
    _, report = run(g.model(y, d), replaced=0)  # Div output is a graph output too


def test_unknown_op_name():
    with pytest.raises(ValueError, match="unknown pattern or plugin 'gelu7'"):
        substitute(G().model("x"), ["gelu7"])


# --- issue 13: policy and crash regressions ------------------------------------------------

def test_ops_as_a_string():
    """Item 10: substitute(m, "all") is substitute(m, ["all"]), not the letters a, l, l."""
    g = G()
    m = g.model(gelu_erf(g, g.op("MatMul", "x", g.c(RNG.standard_normal((H, H))))))
    a, ra = substitute(m, "all")
    b, rb = substitute(m, ["all"])
    assert len(ra.replaced) == 1 and a.SerializeToString() == b.SerializeToString()


@pytest.mark.parametrize("ops", [None, "all"])
@pytest.mark.parametrize("conv", [False, True], ids=["input", "after-conv"])
def test_scalar_add_before_activation_on_last_dim_1(ops, conv):
    """Item 12: the SE-gate hard-sigmoid relu6(x + 3) / 6 on [N, C, 1, 1]: a 0-d constant
    added to a tensor whose last dim is 1 is a bias of one value, never an IndexError."""
    g = G()
    x = g.op("Conv", "x", g.c(RNG.standard_normal((4, 4, 1, 1)))) if conv else "x"
    y = g.op("Div", g.op("Clip", g.op("Add", x, g.c(np.float32(3.0))), g.c(0.0), g.c(6.0)), g.c(6.0))
    m = g.model(y, shapes={"x": ["batch", 4, 1, 1]}, out_shape=["batch", 4, 1, 1])
    fused_here = ops == "all" or not conv  # after a Conv: the Conv epilogue's by default
    out, report = run(m, ops, replaced=int(fused_here))
    if fused_here:
        assert plugin_attrs(plugin_nodes(out)[0])["bias"].tolist() == [3.0]
    else:
        assert report.left[0]["reason"].startswith("bias+relu6 after Conv: TensorRT fuses it into the Conv epilogue")


@pytest.mark.parametrize("identity", [False, True])
def test_lone_layer_norm_policy_ignores_identity(identity):
    """Item 13: a lone LayerNormalization is left to TensorRT whether or not its gamma/beta
    come through Identity nodes (TorchScript writes them for equal parameters)."""
    g = G()
    gamma, beta = g.c(np.ones(H)), g.c(np.zeros(H))
    if identity:
        gamma, beta = g.op("Identity", gamma), g.op("Identity", beta)
    m = g.model(g.op("LayerNormalization", "x", gamma, beta))
    _, report = run(m, replaced=0)
    assert report.left[0]["reason"] == "single LayerNormalization op: TensorRT runs it natively (ask with --ops layer_norm_op)"
    run(m, ["layer_norm_op"])


@pytest.mark.parametrize("producer", ["MatMul", "Gemm", "Conv", "LayerNorm"])
def test_gemm_epilogue_policy(producer):
    """Item 14: by default an activation straight after MatMul/Gemm/Conv (through its bias
    Add) is left to TensorRT's epilogue fusion, with the reason; --ops fuses it; activations
    elsewhere (after a norm) stay fused by default."""
    g = G()
    shape, shapes = ["batch", "seq", H], SHAPES
    if producer == "Conv":  # YOLOv8 / EfficientNet: Conv (bias inside) -> SiLU
        x = g.op("Conv", "x", g.c(RNG.standard_normal((4, 4, 1, 1)) / 4), g.c(RNG.standard_normal(4)))
        shape, shapes = ["batch", 4, "h", "w"], [(2, 3, 5), (1, 2, 2)]
    elif producer == "Gemm":
        x = g.op("Gemm", "x", g.c(RNG.standard_normal((H, H)) / 4))
        shape, shapes = ["batch", H], [(2,), (3,)]
    elif producer == "MatMul":
        x = g.op("MatMul", "x", g.c(RNG.standard_normal((H, H)) / 4))
    else:
        x = layer_norm(g, "x", beta=False)
    if producer != "Conv":
        x = g.op("Add", x, g.c(RNG.standard_normal(H)))
    m = g.model(g.op("Mul", g.op("Sigmoid", x), x), shapes={"x": shape}, out_shape=shape)
    if producer == "LayerNorm":
        out, _ = run(m, replaced=2)
        assert sorted(n.op_type for n in plugin_nodes(out)) == ["BiasActivation", "SkipNorm"]
        return
    _, report = run(m, replaced=0)
    what = "silu" if producer == "Conv" else "bias+silu"
    assert [r["reason"] for r in report.left] == [
        f"{what} after {producer}: TensorRT fuses it into the {producer} epilogue (ask with --ops silu or --ops all)"]
    for ops in (["silu"], "all"):
        out, _ = substitute(m, ops)
        (node,) = plugin_nodes(out)
        assert plugin_attrs(node)["activation"] == "silu" and ("bias" in plugin_attrs(node)) == (producer != "Conv")
        compare(m, out, shapes)
