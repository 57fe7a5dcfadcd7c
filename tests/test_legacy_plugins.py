"""Creators under the names of plugins TensorRT 11.0 removed (issue 16 item 5): TensorRT OSS's
CustomGeluPluginDynamic, version "1", with its public fields (type_id, bias), computing
gelu_tanh(x + bias) over the hidden dim of [S, B, E, 1, 1] inputs, so models and engines that name
it build on TensorRT 11 unchanged. The C ABI harness (CPU); the lean-runtime registry tests
(test_native_registry.py) cover its V2 and V3 creators with every other op."""

from __future__ import annotations

import numpy as np

from plugin_harness import FLOAT, HALF, PF_FLOAT32, PF_INT32
from trtplugins import ops
from trtplugins.ops import bias_activation, registry

NAME = "CustomGeluPluginDynamic"




def test_spec_has_the_public_fields():
    spec = ops.spec(NAME)
    assert [(f.name, f.kind, f.required) for f in spec.fields] == [("type_id", "int", True), ("bias", "weights", False)]
    assert ops.V2_VERSION == "1"  # the version TensorRT OSS registered it under


def test_fields_dims_and_round_trip(h, capfd):
    bias = np.linspace(-1, 1, 64).astype(np.float32)
    p = h.create_from(NAME, type_id=1, bias=bias)
    for shape in [(7, 2, 64, 1, 1), (2, 7, 64), (64,)]:
        assert p.output_dims(0, [shape]) == shape
        assert p.configure([HALF, HALF], [shape, shape], 1) == 0
        assert "bias has" not in capfd.readouterr().err
    rc = p.configure([FLOAT, FLOAT], [(7, 2, 32, 1, 1)] * 2, 1)
    assert "hidden dim of input [7,2,32,1,1]" in capfd.readouterr().err and rc == (0 if h.api == 2 else -1)
    assert p.workspace([HALF, HALF], [(7, 2, 64, 1, 1)] * 2, 1) == 0
    blob = p.serialize()
    assert h.deserialize(NAME, blob).serialize() == blob
    assert h.create_from(NAME, type_id=0) is not None  # bias optional
    for bad, needle in [([("type_id", PF_INT32, np.array([2], np.int32))], "type_id must be 0 (FP32) or 1 (FP16)"),
                        ([("bias", PF_FLOAT32, bias)], "type_id")]:
        assert h.create(NAME, bad) is None
        assert needle in capfd.readouterr().err


def test_reference_bias_over_the_hidden_dim():
    x = np.random.default_rng(0).standard_normal((3, 2, 8, 1, 1)).astype(np.float32)
    b = np.arange(8, dtype=np.float32) / 8
    want = bias_activation.reference(x.reshape(6, 8), b, "gelu_tanh").reshape(x.shape)
    np.testing.assert_array_equal(registry.run_reference(NAME, [x], {"type_id": 0, "bias": b})[0], want)
