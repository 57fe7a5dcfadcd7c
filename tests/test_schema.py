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


def test_every_entry_point_is_described_by_the_library(kernel_library):
    """Python declares the C entry points from trtp_entries (their C types), and the enums no op field
    names from trtp_enums: every exported trtp_ function is described, none restated here."""
    import subprocess

    described = {line.split()[0] for line in kernel_library.trtp_entries().decode().splitlines()}
    exported = subprocess.run(["nm", "-D", "--defined-only", kernel_library._name], capture_output=True, text=True,
                              check=True).stdout.split()
    assert {s for s in exported if s.startswith("trtp_")} - {"trtp_entries", "trtp_enums"} == described
    assert kernel_library.trtp_skip_norm.argtypes[10] is __import__("ctypes").c_float  # epsilon
    assert kernels.enums()["dtype"] == {"float32": 0, "float16": 1, "bfloat16": 2}


def test_the_op_docs_are_generated_from_the_schema():
    from trtplugins.ops import docs

    assert docs.PATH.read_text() == docs.render(), "docs/ops.md is stale: python -m trtplugins.ops --docs"
