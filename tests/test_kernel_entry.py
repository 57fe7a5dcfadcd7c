"""The C entry for any op by its fields (plugin_src/capi/run.h, trtplugins.kernels.Kernel): created
the way the plugin is (the same field table and checks), configured for shapes, its workspace and
output shapes; every failure one line. CPU only (tests/gpu/test_kernel_entry_gpu.py launches)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

from trtplugins import kernels, ops
from trtplugins.ops import group_norm, skip_norm


@pytest.fixture(autouse=True)
def _library(kernel_library):
    return kernel_library


def ones(n: int) -> np.ndarray:
    return np.ones(n, np.float32)


def test_the_library_declares_the_schema():
    assert kernels.load().trtp_schema().decode() == ops.SCHEMA_PATH.read_text()


@pytest.mark.parametrize("op, fields, needle", [
    ("SkipNorm", {"norm": "rms"}, "required field 'gamma' is missing"),
    ("SkipNorm", {"norm": "layer", "gamma": ones(2), "output_sum": 2}, "output_sum must be 0 or 1, got 2"),
    ("GroupNorm", {"num_groups": 0, "gamma": ones(2)}, "num_groups must be >= 1, got 0"),
    ("GroupNorm", {"num_groups": 3, "gamma": ones(4)}, "not divisible by num_groups 3"),
    ("GatedActivation", {"activation": "silu", "gate_bias": ones(2), "linear_bias": ones(3)}, "gate_bias has 2 values"),
    ("CustomGeluPluginDynamic", {"type_id": 2}, "type_id must be 0 (FP32) or 1 (FP16), got 2"),
])
def test_bad_fields_are_one_line(op, fields, needle):
    with pytest.raises(kernels.KernelError) as e:
        kernels.Kernel(op, **fields)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_configure_checks_shapes_like_the_plugin():
    k = kernels.Kernel("SkipNorm", norm="rms", gamma=ones(8), output_sum=1)
    assert (k.nb_outputs, k.output_shape((2, 3, 8), (3, 8))) == (2, (2, 3, 8))
    k.configure("float16", (2, 3, 8), (3, 8))  # a skip broadcast over the leading dims
    with pytest.raises(kernels.KernelError, match="last dim of input \\[2,3,7\\] is 7, gamma has 8 values"):
        k.configure("float16", (2, 3, 7))
    with pytest.raises(kernels.KernelError, match="3 inputs, expected 1..2"):
        k.configure("float32", (8,), (8,), (8,))


def test_output_shapes_and_workspace():
    gated = kernels.Kernel("GatedActivation", activation="gelu")
    assert gated.output_shape((5, 16)) == (5, 8) and gated.output_shape((5, 8), (5, 8)) == (5, 8)
    gn = kernels.Kernel("GroupNorm", num_groups=4, gamma=ones(8))
    assert gn.workspace_size("float16", (3, 8, 4, 4)) == group_norm.workspace_size(3, 4, "channels_first") > 0
    assert kernels.Kernel("BiasActivation", activation="relu").workspace_size("float32", (4, 4)) == 0
    legacy = kernels.Kernel("CustomGeluPluginDynamic", type_id=1, bias=ones(3))
    assert legacy.output_shape((2, 1, 3, 1, 1)) == (2, 1, 3, 1, 1)


def test_unknown_ops_and_fields_are_named():
    with pytest.raises(KeyError, match="unknown plugin 'Nope'"):
        kernels.Kernel("Nope")
    with pytest.raises(TypeError, match="unknown field"):
        kernels.Kernel("BiasActivation", activation="relu", alpha=1.0)


def test_skip_rows_is_one_rule_in_both_languages():
    """trtp_skip_norm_skip_rows (the plugin's check and launch, the C++ torch launches) and skip_norm.skip_fits
    (the reference, the torch ops) take the same skips; the rows are what repeats over x's leading dims."""
    def skip_rows(x, s):
        arr = lambda dims: (ctypes.c_longlong * max(len(dims), 1))(*dims)  # noqa: E731
        return kernels.load().trtp_skip_norm_skip_rows(arr(x), len(x), arr(s), len(s))

    x = (2, 5, 16)
    cases = {(2, 5, 16): 0, (5, 16): 5, (1, 5, 16): 5, (1, 1, 16): 1, (16,): 1, (1, 1, 1, 16): -1, (2, 1, 16): -1,
             (3, 16): -1, (5, 8): -1, (2, 2, 5, 16): -1, (): -1, (1,): -1}
    for s, rows in cases.items():
        assert skip_rows(x, s) == rows, s
        assert skip_norm.skip_fits(x, s) == (rows >= 0), s
    for x, s, rows in [((2, 1), (1,), 1), ((2, 1), (2, 1), 0), ((1, 3, 4), (3, 4), 0), ((4,), (4,), 0),
                       ((4,), (1, 4), -1), ((-1, 5, 16), (5, 16), 0), ((2, -1, 16), (3, 16), 0)]:
        assert skip_rows(x, s) == rows, (x, s)
        if min(x) >= 0:
            assert skip_norm.skip_fits(x, s) == (rows >= 0), (x, s)


def test_group_norm_floor_refuses_bad_arguments_without_launching():
    """trtp_group_norm_floor (the benchmark's one-launch floors) checks its arguments before any CUDA call:
    cudaErrorInvalidValue (1) for an unknown barrier, bytes not whole 16-byte packs, a null or misaligned pointer,
    no CTAs, a cluster that does not divide them; the Python side names the barriers."""
    floor = kernels.load().trtp_group_norm_floor
    buf = ctypes.create_string_buffer(64 + 16)
    p = ctypes.addressof(buf) + (-ctypes.addressof(buf)) % 16  # 16-byte aligned
    for barrier, x, y, nbytes, ctas, cluster in [(7, p, p, 64, 1, 0), (-1, p, p, 64, 1, 0), (0, p, p, 60, 1, 0),
                                                  (0, None, p, 64, 1, 0), (0, p + 8, p, 64, 1, 0), (1, p, p, 64, 0, 0),
                                                  (2, p, p, 64, 3, 2), (2, p, p, 64, 2, 9), (3, p, p, 0, 1, 0)]:
        assert floor(barrier, x, y, nbytes, ctas, cluster, None) == 1, (barrier, nbytes, ctas, cluster)
    with pytest.raises(ValueError, match="barrier must be one of none, cta, cluster, grid"):
        group_norm.floor(None, None, "mesh", 1)
