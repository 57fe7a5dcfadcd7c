"""The norm and GELU forms exporters other than today's PyTorch write (issue 15), each on a
graph built the way that exporter writes it, asserting counts and ONNX Runtime equality;
the models ONNX Runtime runs that the checker refuses; the type guard; and the report
accounting for every norm/GELU candidate."""

import math

import numpy as np
import onnx
import pytest
from conftest import compare, ort_run, plugin_attrs, plugin_nodes
from onnx import TensorProto as T
from onnx import helper as h
from test_patterns import SHAPES, G, H, RNG, layer_norm

from trtplugins.graph import Evaluator, GraphError, load_model, substitute

SQRT_2_PI = math.sqrt(2 / math.pi)


def vec(n=H):
    return RNG.standard_normal(n).astype(np.float32)


def dense(g, x, reshape=False):
    """A Linear layer as exporters write it: MatMul + bias Add; tf2onnx's Tensordot puts a
    Reshape between them (then the activation is not straight after a GEMM)."""
    mm = g.op("MatMul", x, g.c(RNG.standard_normal((H, H)) / 4))
    if reshape:
        mm = g.op("Reshape", mm, g.c(np.array([0, 0, H], np.int64)))
    return g.op("Add", mm, g.c(vec()))


def fused(model, ops=None, replaced=1, shapes=SHAPES, tol=1e-5):
    out, report = substitute(model, ops)
    assert len(report.replaced) == replaced, str(report)
    if replaced:
        compare(model, out, shapes, rtol=tol, atol=tol)
    return out, report


def only_plugins(out):
    return [n.op_type for n in out.graph.node if n.op_type not in ("Constant", "MatMul", "Reshape")]


# --- form 1: TF/Keras LayerNorm in batch-norm form ---------------------------------------

def tf_layer_norm(g, x, axes, gamma=True):
    """tf2onnx / keras2onnx: moments (SquaredDifference as Sub + Mul), then
    s = gamma * Reciprocal(Sqrt(var + eps)), y = x * s + (beta - mean * s)."""
    mean = g.op("ReduceMean", x, axes=axes)
    d = g.op("Sub", x, mean)
    var = g.op("ReduceMean", g.op("Mul", d, d), axes=axes)
    s = g.op("Reciprocal", g.op("Sqrt", g.op("Add", var, g.c(1e-12))))
    if gamma:
        s = g.op("Mul", s, g.c(vec()))
    return g.op("Add", g.op("Mul", x, s), g.op("Sub", g.c(vec()), g.op("Mul", mean, s)))


@pytest.mark.parametrize("opset,axes,gamma", [(13, [2], True), (11, [-1], True), (13, [-1], False)],
                         ids=["tf2onnx-13", "keras2onnx-11", "no-gamma"])
def test_tf_batchnorm_form_layer_norm(opset, axes, gamma):
    g = G(opset=opset)
    s = g.op("Add", dense(g, "x", reshape=True), "x")  # the residual add in front
    out, report = fused(g.model(tf_layer_norm(g, s, axes, gamma)))
    (node,) = plugin_nodes(out)
    a = plugin_attrs(node)
    assert node.op_type == "SkipNorm" and a["norm"] == "layer" and "beta" in a and "bias" in a
    assert abs(a["epsilon"] - 1e-12) < 1e-18 and report.replaced[0]["variant"] == "layer+skip+bias"
    assert only_plugins(out) == ["SkipNorm"]


# --- form 2: erf-GELU dividing by a Sqrt(2) node; form 6: rounded sqrt(2) ------------------

def tf_gelu(g, x, divisor):
    """tf2onnx: x * (0.5 * (1 + Erf(x / divisor)))."""
    e = g.op("Erf", g.op("Div", x, divisor))
    return g.op("Mul", x, g.op("Mul", g.c(0.5), g.op("Add", g.c(1.0), e)))


def test_gelu_divided_by_a_sqrt_node():
    g = G(opset=13)
    x = dense(g, "x", reshape=True)
    m = g.model(tf_gelu(g, x, g.op("Sqrt", g.c(2.0))))
    _, report = fused(m, replaced=0)  # MatMul -> Reshape -> bias: still the GEMM's epilogue
    assert report.left[0]["reason"].startswith("bias+gelu after MatMul: TensorRT fuses it into the MatMul epilogue")
    out, report = fused(m, "all")
    assert only_plugins(out) == ["BiasActivation"] and plugin_attrs(plugin_nodes(out)[0])["activation"] == "gelu"
    assert "notes" not in report.replaced[0]  # Sqrt(2) folds to sqrt 2 exactly


@pytest.mark.parametrize("divisor,dtype,accepted", [
    (1.41421, np.float32, True),  # Megatron
    (1.41406, np.float16, True),  # the FP16 value of sqrt 2: every FP16 Whisper export
    (1.4135, np.float16, False),  # an FP16 constant further than FP16 rounding
    (1.4141, np.float32, False),  # 1e-4 off in FP32: a different constant
    (1.5, np.float32, False),
], ids=["megatron-1.41421", "fp16-1.41406", "fp16-off", "fp32-off", "1.5"])
def test_gelu_rounded_sqrt2(divisor, dtype, accepted):
    g = G(opset=17)
    elem = T.FLOAT16 if dtype == np.float16 else T.FLOAT
    x = g.op("Mul", "x", g.c(vec(), dtype))  # not after a GEMM: fused by default
    m = g.model(tf_gelu_half(g, x, g.c(divisor, dtype), dtype), elem=elem)
    out, report = fused(m, replaced=int(accepted), tol=1e-2 if dtype == np.float16 else 1e-5)
    if accepted:
        (note,) = report.replaced[0]["notes"]
        assert note.startswith("Erf divisor is 1.414") and "(relative)" in note and f"accepted   1 x {note}" in str(report)
    else:
        assert [r["pattern"] for r in report.left] == ["gelu_erf"] and "not x / sqrt(2)" in report.left[0]["reason"]


def tf_gelu_half(g, x, divisor, dtype):
    e = g.op("Erf", g.op("Div", x, divisor))
    return g.op("Mul", g.op("Mul", x, g.c(0.5, dtype)), g.op("Add", e, g.c(1.0, dtype)))


# --- forms 3 and 4: PyTorch 1.x GPT-2 / Megatron LayerNorm (opset 12, converted) ---------

def torch1_layer_norm(g, x, twice):
    """mean, x - mean (a no-op Cast before Pow in GPT-2; computed twice in Megatron)."""
    mean = g.op("ReduceMean", x, axes=[-1])
    d = g.op("Sub", x, mean)
    var = g.op("ReduceMean", g.op("Pow", g.op("Cast", d, to=T.FLOAT), g.c(2.0)), axes=[-1])
    num = g.op("Sub", x, mean) if twice else d
    y = g.op("Cast", g.op("Div", num, g.op("Sqrt", g.op("Add", var, g.c(1e-5)))), to=T.FLOAT)
    return g.op("Add", g.op("Mul", g.c(vec()), y), g.c(vec()))


@pytest.mark.parametrize("twice", [False, True], ids=["gpt2-noop-cast", "megatron-sub-twice"])
def test_torch1_layer_norm(twice):
    g = G(opset=12)
    x = g.op("Cast", g.op("Add", "x", dense(g, "x")), to=T.FLOAT)
    out, report = fused(g.model(torch1_layer_norm(g, x, twice)))
    assert report.notes == ["converted opset 12 -> 13 with onnx.version_converter (opset 12 < 13)"]
    assert only_plugins(out) == ["SkipNorm"] and report.replaced[0]["variant"] == "layer+skip+bias"


# --- form 5: every algebraic spelling of tanh-GELU (issue 16 item 3: BLOOM) -----------------

def gelu_fast(g, x):  # HF gelu_fast: 0.5 * x * (1 + tanh(x * 0.7978845608 * (1 + 0.044715 * x * x)))
    inner = g.op("Mul", g.op("Mul", x, g.c(0.7978845608)), g.op("Add", g.c(1.0), g.op("Mul", g.op("Mul", g.c(0.044715), x), x)))
    return g.op("Mul", g.op("Mul", g.c(0.5), x), g.op("Add", g.c(1.0), g.op("Tanh", inner)))


def openai_gelu(g, x):  # Megatron: 0.5 * x * (1 + tanh(0.7978845608028654 * x * (1 + 0.044715 * x * x)))
    inner = g.op("Mul", g.op("Mul", g.c(0.7978845608028654), x), g.op("Add", g.c(1.0), g.op("Mul", g.c(0.044715), g.op("Mul", x, x))))
    return g.op("Mul", g.op("Mul", g.c(0.5), x), g.op("Add", g.c(1.0), g.op("Tanh", inner)))


def bloom_gelu(g, x):  # BLOOM: x * 0.5 * (1 + tanh(0.79788456 * x * (1 + 0.044715 * x * x)))
    inner = g.op("Mul", g.op("Mul", g.c(0.79788456), x), g.op("Add", g.c(1.0), g.op("Mul", g.op("Mul", g.c(0.044715), x), x)))
    return g.op("Mul", g.op("Mul", x, g.c(0.5)), g.op("Add", g.c(1.0), g.op("Tanh", inner)))


def cube_gelu(g, x):  # x + 0.044715 * x**3 expanded with a Pow, scale applied last
    inner = g.op("Mul", g.op("Add", x, g.op("Mul", g.op("Pow", x, g.c(3.0)), g.c(0.044715))), g.c(SQRT_2_PI))
    return g.op("Mul", x, g.op("Mul", g.op("Add", g.op("Tanh", inner), g.c(1.0)), g.c(0.5)))


@pytest.mark.parametrize("form", [gelu_fast, openai_gelu, bloom_gelu, cube_gelu], ids=lambda f: f.__name__)
def test_tanh_gelu_spellings(form):
    g = G()
    m = g.model(form(g, dense(g, "x")))
    _, report = fused(m, replaced=0)  # straight after a MatMul: left to the GEMM epilogue, reported
    (left,) = report.left
    assert left["pattern"] == "gelu_tanh" and "bias+gelu_tanh after MatMul" in left["reason"]
    out, _ = fused(m, "all")
    assert only_plugins(out) == ["BiasActivation"] and plugin_attrs(plugin_nodes(out)[0])["activation"] == "gelu_tanh"
    g = G()  # after a norm: fused by default
    out, _ = fused(g.model(form(g, layer_norm(g, "x"))), replaced=2)
    assert sorted(only_plugins(out)) == ["BiasActivation", "SkipNorm"]


def test_tanh_gelu_wrong_coefficient():
    g = G()
    inner = g.op("Mul", g.op("Mul", g.c(0.79788456), "x"), g.op("Add", g.c(1.0), g.op("Mul", g.op("Mul", g.c(0.05), "x"), "x")))
    y = g.op("Mul", g.op("Mul", "x", g.c(0.5)), g.op("Add", g.c(1.0), g.op("Tanh", inner)))
    _, report = fused(g.model(y), "all", replaced=0)
    assert report.left == [{"pattern": "gelu_tanh", "anchor": report.left[0]["anchor"], "reason": "cubic coefficient 0.05 != 0.044715"}]


# --- form 7: RMSNorm where shape inference gives no rank ------------------------------------

def test_rms_norm_without_rank():
    """Qwen3 after attention: a Reshape to a computed shape hides the rank; axes=[-1] says
    the reduction is over the last axis, the MatMul's weight proves hidden."""
    g = G(opset=18)
    o = g.op("MatMul", g.op("Reshape", "x", "shape"), g.c(RNG.standard_normal((H, H)) / 4))
    var = g.op("ReduceMean", g.op("Pow", o, g.c(2.0)), g.c(np.array([-1], np.int64)))
    y = g.op("Mul", g.c(vec()), g.op("Mul", o, g.op("Reciprocal", g.op("Sqrt", g.op("Add", var, g.c(1e-6))))))
    m = g.model(y, inputs=("x", "shape"), shapes={"shape": (T.INT64, ["n"])}, out_shape=["rows", H])
    out, report = substitute(m)
    (node,) = plugin_nodes(out)
    assert plugin_attrs(node)["norm"] == "rms" and report.replaced[0]["variant"] == "rms"
    feeds = {"x": RNG.standard_normal((2, 5, H)).astype(np.float32), "shape": np.array([10, H], np.int64)}
    np.testing.assert_allclose(Evaluator(out).run(feeds)[y], ort_run(m, feeds)[y], rtol=1e-5, atol=1e-5)


# --- form 8: LayerNorm in float64 between Casts; the type guard ------------------------------

def double_ln(g, x, narrow=True):
    ln = g.op("LayerNormalization", g.op("Cast", x, to=T.DOUBLE), g.c(vec(), np.float64), g.c(vec(), np.float64))
    return g.op("Cast", ln, to=T.FLOAT16) if narrow else ln


def test_float64_layer_norm_between_casts():
    """CLIP / Phi-3.5 vision FP16: Cast(fp64) -> LayerNormalization -> Cast(fp16): one
    SkipNorm on the FP16 tensors, the casts absorbed."""
    g = G()
    m = g.model(double_ln(g, "x"), elem=T.FLOAT16)
    out, report = fused(m, tol=1e-2)
    (node,) = plugin_nodes(out)
    assert [n.op_type for n in out.graph.node] == ["SkipNorm"] and list(node.input) == ["x"]
    assert report.replaced[0]["nodes"] == ["n1", "n4", "n5"]


def test_fp16_layer_norm_with_float64_variance():
    """Phi-3.5 vision FP16 export: mean and x - mean in FP16, then Cast(fp64) -> Pow ->
    mean -> Sqrt -> Div in float64, Cast(fp16) -> gamma, beta: one SkipNorm on FP16."""
    g = G()
    mean = g.op("ReduceMean", "x", axes=[-1])
    d = g.op("Cast", g.op("Sub", "x", mean), to=T.DOUBLE)
    var = g.op("ReduceMean", g.op("Pow", d, g.c(2.0, np.float64)), axes=[-1])
    y = g.op("Cast", g.op("Div", d, g.op("Sqrt", g.op("Add", var, g.c(1e-5, np.float64)))), to=T.FLOAT16)
    y = g.op("Add", g.op("Mul", y, g.c(vec(), np.float16)), g.c(vec(), np.float16))
    out, report = fused(g.model(y, elem=T.FLOAT16), tol=1e-2)
    assert [n.op_type for n in out.graph.node] == ["SkipNorm"] and report.replaced[0]["pattern"] == "layer_norm"


def test_no_plugin_node_on_double():
    """A norm that stays in float64 is left, with the reason: SkipNorm takes FP32/FP16/BF16."""
    g = G()
    m = g.model(double_ln(g, "x", narrow=False), elem=T.FLOAT16, check=False)
    m.graph.output[0].type.tensor_type.elem_type = T.DOUBLE
    for ops in (None, "all"):
        out, report = substitute(m, ops)
        assert not plugin_nodes(out)
        assert [r["reason"] for r in report.left] == ["'t1' is float64: SkipNorm takes float32/float16/bfloat16"]


# --- form 9: GELU whose bias sits in a Gemm (GPT-2 Conv1D) -----------------------------------

@pytest.mark.parametrize("view", [False, True], ids=["gemm", "gemm-view"])
def test_gelu_bias_inside_gemm(view):
    """GPT-2 Conv1D: addmm(b, x.view(-1, nx), W) then .view(*x.size()[:-1], nf), the shape a
    Concat of the leading dims and nf; the Gemm's beta scales its bias."""
    g = G()
    rows = g.op("Reshape", "x", g.c(np.array([-1, H], np.int64))) if view else "x"
    x = g.op("Gemm", rows, g.c(RNG.standard_normal((H, H)) / 4), g.c(vec()), beta=0.5)
    if view:
        lead = g.op("Slice", g.op("Shape", "x"), g.c(np.array([0], np.int64)), g.c(np.array([-1], np.int64)))
        x = g.op("Reshape", x, g.op("Concat", lead, g.c(np.array([H], np.int64)), axis=0))
    shape, shapes = (["batch", "seq", H], SHAPES) if view else (["rows", H], [(3,), (5,)])
    m = g.model(cube_gelu(g, x), shapes={"x": shape}, out_shape=shape)
    _, report = fused(m, replaced=0, shapes=shapes)
    assert "bias+gelu_tanh after Gemm: TensorRT fuses it into the Gemm epilogue" in report.left[0]["reason"]
    out, report = fused(m, "all", shapes=shapes)
    assert report.replaced[0]["variant"] == "gelu_tanh+bias(Gemm)"
    (gemm,) = [n for n in out.graph.node if n.op_type == "Gemm"]
    assert len(gemm.input) == 2 and "bias" in plugin_attrs(plugin_nodes(out)[0])


# --- models ONNX Runtime runs that the checker refuses ---------------------------------------

def layer_norm_op_model(opset, reverse=False, contrib=False):
    g = G(opset=opset)
    s = g.op("Add", "x", "r")
    y = g.op("LayerNormalization", s, g.c(vec()), g.c(vec()), epsilon=1e-5)
    if contrib:  # a contrib node written without its opset import
        g.nodes.append(h.make_node("FastGelu", [y], ["z"], domain="com.microsoft"))
        y = "z"
    if reverse:
        g.nodes.reverse()
    return g.model(y, inputs=("x", "r"), check=False)


@pytest.mark.parametrize("case,opset,note", [
    ("layernorm-opset16", 16, "converted opset 16 -> 17 with onnx.version_converter (LayerNormalization in the default domain is the opset-17 op)"),
    ("unsorted", 17, "sorted the nodes topologically"),
    ("contrib-no-import", 17, "added the missing com.microsoft opset import"),
], ids=lambda x: x if isinstance(x, str) and " " not in x else None)
def test_models_onnx_runtime_runs(tmp_path, case, opset, note):
    m = layer_norm_op_model(opset, reverse=case == "unsorted", contrib=case == "contrib-no-import")
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(m)
    path = tmp_path / "m.onnx"
    onnx.save(m, path)
    load_model(path)  # accepted
    out, report = substitute(m)
    assert note in report.notes and [n.op_type for n in out.graph.node if n.domain == "trtplugins"] == ["SkipNorm"]
    onnx.checker.check_model(out, full_check=True)
    if case != "contrib-no-import":  # ONNX Runtime runs the original as it is
        compare(m, out, SHAPES)


def test_output_declared_without_shape():
    """ONNX Runtime runs a graph output declared without a shape; shape inference gives it one."""
    g = G()
    m = g.model(layer_norm(g, g.op("Add", "x", "r")), inputs=("x", "r"), check=False)
    m.graph.output[0].type.tensor_type.ClearField("shape")
    out, report = fused(m)
    assert report.notes == [f"gave graph outputs ['{m.graph.output[0].name}'] the shape inference found (declared without one)"]
    assert out.graph.output[0].type.tensor_type.HasField("shape")


def test_invalid_model_names_the_node(tmp_path):
    g = G()
    g.nodes.append(h.make_node("Add", ["x", "x", "x"], ["y"], name="bad_add"))
    path = tmp_path / "bad.onnx"
    onnx.save(g.model("y", check=False), path)
    with pytest.raises(GraphError, match=r"invalid ONNX model: Node\(bad_add\) .* has input size 3") as e:
        load_model(path)
    assert "corrupt" not in str(e.value)


# --- no silent skip ------------------------------------------------------------------------

def test_every_unfused_candidate_is_reported():
    """Each node starting a norm/GELU candidate (Erf, Tanh, a last-axis ReduceMean, a square
    feeding one) that ends unfused has exactly one `left` entry naming the pattern and the
    first condition that failed."""
    g = G(opset=13)
    pooled = g.op("ReduceMean", "x", axes=[-1])  # a mean that is no LayerNorm
    lone_erf = g.op("Erf", "x")  # Erf of x itself
    lone_tanh = g.op("Tanh", g.op("Mul", "x", g.c(2.0)))  # tanh(2x): no GELU
    ms = g.op("ReduceMean", g.op("Mul", "x", "x"), axes=[-1])  # mean square, no Sqrt after
    half = g.op("Sqrt", ms)
    good = layer_norm(g, "x")  # one candidate that is fused
    m = g.model(pooled, lone_erf, lone_tanh, half, good, out_shape=["batch", "seq", "any"])
    out, report = substitute(m)
    assert report.candidates == 5 and len(report.replaced) == 1
    reasons = {r["pattern"]: r["reason"] for r in report.left}
    assert len(report.left) == 4 and set(reasons) == {"layer_norm", "gelu_erf", "gelu_tanh", "rms_norm"}
    assert reasons["layer_norm"].startswith("the mean is not subtracted from its input (skip_norm.py:")
    assert reasons["gelu_erf"].startswith("Erf of x itself (bias_activation.py:")
    assert reasons["gelu_tanh"].startswith("Tanh argument is not a cubic in x (bias_activation.py:")
    # the pattern's line and the helper's condition that failed
    assert reasons["rms_norm"].startswith(f"'{ms}' goes to Sqrt, not Add (skip_norm.py:")
    assert "`y, tail, eps = inv_std(" in reasons["rms_norm"] and "via match.py:" in reasons["rms_norm"]
    _, report = substitute(m, ["relu"])  # patterns not asked for: still accounted for
    assert len(report.left) == 5 and all(r["reason"] == "not selected by --ops" for r in report.left)
