"""trtplugins.ops is derived from the C++ op declarations: schema.json is what the library
declares (test_plugin_methods.py::test_schema_of_the_library compares it with each build),
and nothing Python-side repeats it."""

from __future__ import annotations

from trtplugins import kernels, ops
from trtplugins.ops import bias_activation, skip_norm


def test_kernel_enum_ids_are_the_declared_ones():
    assert bias_activation.ACTIVATION_IDS == ops.spec(ops.BIAS_ACTIVATION).enum_ids("activation")
    assert skip_norm.NORM_IDS == ops.spec(ops.SKIP_NORM).enum_ids("norm")


def test_schema_shape():
    sn = ops.spec(ops.SKIP_NORM)
    assert (sn.min_inputs, sn.max_inputs) == (1, 2)
    assert sn.num_outputs({}) == 1 and sn.num_outputs({"output_sum": 1}) == 2
    assert sn.field("epsilon").default == 1e-5 and sn.field("gamma").required
    assert ops.ACTIVATIONS[:4] == ("identity", "relu", "relu6", "gelu")
    assert (ops.V2_VERSION, ops.V3_VERSION) == ("1", "2")
