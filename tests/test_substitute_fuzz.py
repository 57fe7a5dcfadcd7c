"""Substitution never changes what a model computes. Real exported models get one
small float constant perturbed at a time (GELU/erf scales, epsilons, exponents,
gamma/beta/bias vectors); whatever the tool then fuses or leaves, the substituted
model must still equal ONNX Runtime on the perturbed original, and nothing raises."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from conftest import compare
from trtplugins.graph import substitute

MODELS = [("bert", 14, "gelu"), ("albert", 17, "gelu"), ("llama_rms", 17, "gelu"), ("mlp", 17, "quick_gelu"),
          ("mlp", 17, "hardswish")]
PER_MODEL = 12


def small_float_constants(model):
    """(kind, index) of every float initializer / Constant value with <= 64 elements."""
    found = [("init", i) for i, t in enumerate(model.graph.initializer)
             if t.data_type == onnx.TensorProto.FLOAT and int(np.prod(t.dims)) <= 64]
    for i, n in enumerate(model.graph.node):
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            t = n.attribute[0].t
            if t.data_type == onnx.TensorProto.FLOAT and int(np.prod(t.dims)) <= 64:
                found.append(("node", i))
    return found


def perturbed(model, where, rng):
    m = onnx.ModelProto()
    m.CopyFrom(model)
    kind, i = where
    t = m.graph.initializer[i] if kind == "init" else m.graph.node[i].attribute[0].t
    a = numpy_helper.to_array(t).astype(np.float32).copy()
    flat = a.reshape(-1)
    j = int(rng.integers(flat.size))
    with np.errstate(over="ignore"):  # float32-min masks may become -inf: fine for both sides
        flat[j] = flat[j] * float(rng.choice([0.5, 0.98, 1.02, 2.0, -1.0])) + float(rng.choice([0.0, 1e-3]))
    t.CopyFrom(numpy_helper.from_array(a, t.name))
    return m


@pytest.mark.parametrize("kind,opset,act", MODELS, ids=[f"{k}-{o}-{a}" for k, o, a in MODELS])
def test_perturbed_constants_never_change_the_math(exported, kind, opset, act):
    model = exported(kind, opset, False, act)
    rng = np.random.default_rng(opset)
    spots = small_float_constants(model)
    assert spots, "no small float constants to perturb"
    fused_any = left_any = False
    for k in rng.choice(len(spots), size=min(PER_MODEL, len(spots)), replace=False):
        m = perturbed(model, spots[int(k)], rng)
        out, report = substitute(m, "all")  # every pattern, the GEMM-epilogue activations too
        compare(m, out, [(2, 5)])
        fused_any |= bool(report.replaced)
        left_any |= bool(report.left)
    assert fused_any  # the perturbations do not all sit on fused constants
