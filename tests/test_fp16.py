"""FP32 -> FP16 conversion of substituted models (TensorRT 11 strong typing): typing
rules checked on real exports, numerics against the FP32 original within FP16 error."""

import numpy as np
import onnx
import pytest
from conftest import ort_run, plugin_nodes, random_feeds
from onnx import TensorProto as T

from trtplugins.graph import Evaluator, convert_fp16, substitute

CASES = [("bert", 14, False), ("bert", 17, False), ("albert", 18, True), ("t5_rms", 14, False), ("llama_rms", 17, False)]


def types(model):
    inferred = onnx.shape_inference.infer_shapes(model)
    g = inferred.graph
    out = {v.name: v.type.tensor_type.elem_type for v in list(g.value_info) + list(g.input) + list(g.output)}
    out.update({t.name: t.data_type for t in g.initializer})
    for n in g.node:
        if n.op_type == "Constant":
            out[n.output[0]] = n.attribute[0].t.data_type
    return out


@pytest.mark.parametrize("kind,opset,dynamo", CASES, ids=[f"{k}-{o}{'-dynamo' if d else ''}" for k, o, d in CASES])
def test_fp16_typing_and_numerics(exported, kind, opset, dynamo):
    model = exported(kind, opset, dynamo)
    sub, _ = substitute(model)
    before = sub.SerializeToString()
    half = convert_fp16(sub)
    assert sub.SerializeToString() == before
    onnx.checker.check_model(half, full_check=True)
    ty = types(half)
    assert [ty[i.name] for i in half.graph.input] == [ty[i.name] for i in sub.graph.input]  # FP32 I/O kept
    assert all(ty[o.name] == T.FLOAT for o in half.graph.output)
    for node in plugin_nodes(half):
        assert all(ty[x] == T.FLOAT16 for x in node.input) and all(ty[y] == T.FLOAT16 for y in node.output)
        assert all(a.t.data_type == T.FLOAT16 for a in node.attribute if a.type == onnx.AttributeProto.TENSOR)
    for node in half.graph.node:
        if node.op_type in ("MatMul", "Gemm", "Softmax"):
            assert all(ty[x] == T.FLOAT16 for x in node.input if x), node.name
        if node.op_type in ("ReduceMean", "Pow", "Sqrt", "LayerNormalization"):  # unfused norms stay FP32
            assert ty[node.input[0]] == T.FLOAT, node.name
    for t in half.graph.initializer:
        assert np.isfinite(onnx.numpy_helper.to_array(t).astype(np.float32)).all(), t.name
    ev = Evaluator(half)
    for i, shape in enumerate([(2, 8), (1, 5), (3, 13)]):
        feeds = random_feeds(model, shape, seed=i)
        ref, got = ort_run(model, feeds), ev.run(feeds)
        for name, r in ref.items():
            assert got[name].dtype == np.float32
            np.testing.assert_allclose(got[name], r, rtol=1e-2, atol=1e-2 * max(1.0, np.abs(r).max()))


def test_fp16_io_types_and_masks(exported):
    """keep_io_types=False: float inputs/outputs become FP16; float32-min mask constants
    saturate to -65504 instead of -inf."""
    sub, _ = substitute(exported("t5_rms", 17))
    half = convert_fp16(sub, keep_io_types=False)
    ty = types(half)
    assert all(ty[i.name] == T.FLOAT16 for i in half.graph.input)
    assert all(ty[o.name] == T.FLOAT16 for o in half.graph.output)
    feeds = {k: v.astype(np.float16) for k, v in random_feeds(sub, (2, 8)).items()}
    out = Evaluator(half).run(feeds)
    assert all(v.dtype == np.float16 and np.isfinite(v).all() for v in out.values())

    from trtplugins.graph.fp16 import _half

    assert _half(np.array([np.finfo(np.float32).min, 1e9, 0.5], np.float32)).tolist() == [-65504.0, 65504.0, 0.5]


def test_fp16_keeps_resize_scales_fp32():
    """An input whose schema type has no float16 (Resize scales) stays FP32."""
    from onnx import helper as h

    x = h.make_tensor_value_info("x", T.FLOAT, [1, 2, 4, 4])
    y = h.make_tensor_value_info("y", T.FLOAT, [1, 2, 8, 8])
    scales = h.make_tensor("scales", T.FLOAT, [4], [1, 1, 2, 2])
    node = h.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")
    m = h.make_model(h.make_graph([node], "g", [x], [y], [scales]), opset_imports=[h.make_opsetid("", 17)])
    half = convert_fp16(m)
    resize = next(n for n in half.graph.node if n.op_type == "Resize")
    ty = types(half)
    assert ty[resize.input[0]] == T.FLOAT16 and ty[resize.input[2]] == T.FLOAT
    feeds = {"x": np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)}
    np.testing.assert_allclose(Evaluator(half).run(feeds)["y"], ort_run(m, feeds)["y"], rtol=1e-3, atol=1e-3)


def test_fp16_unfused_layer_norm_stays_fp32(exported):
    """Only GELU substituted: the decomposed LayerNorms (reductions, and the elementwise
    tail they feed) stay FP32 between Casts, the MatMuls and the plugin go FP16."""
    model = exported("bert", 14)
    sub, _ = substitute(model, ["gelu_erf"])
    half = convert_fp16(sub)
    ty = types(half)
    by_out = {y: n for n in half.graph.node for y in n.output}
    divs = [n for n in half.graph.node if n.op_type == "Div" and by_out.get(n.input[1], n).op_type == "Sqrt"]
    assert len(divs) == 5 and all(ty[n.input[0]] == T.FLOAT and ty[n.output[0]] == T.FLOAT for n in divs)
    assert all(ty[n.input[0]] == T.FLOAT for n in half.graph.node if n.op_type in ("ReduceMean", "Pow", "Sqrt"))
    assert all(ty[x] == T.FLOAT16 for n in half.graph.node if n.op_type == "MatMul" for x in n.input)
    feeds = random_feeds(model, (2, 8))
    ref, got = ort_run(model, feeds), Evaluator(half).run(feeds)
    for name, r in ref.items():
        np.testing.assert_allclose(got[name], r, rtol=1e-2, atol=1e-2 * max(1.0, np.abs(r).max()))
