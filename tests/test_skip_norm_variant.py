"""SkipNorm's variant choice on the CPU: a pure function of (dtype, norm, skip, hidden, weight kind,
small launch or not), so the pair a plugin picks when configured is checked here without a GPU."""

from __future__ import annotations

import pytest

from trtplugins import kernels

HOIST, VEC, WARP, LONG = 32, 64, 16, 15
PACKS = (1, 2, 3, 4, 6, 8)  # packs per thread by variant index (skip_norm.cu kNvs)


pytestmark = pytest.mark.usefixtures("kernel_library")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("norm,skip", [("layer", False), ("layer", True), ("rms", False), ("rms", True)])
@pytest.mark.parametrize("hidden", [1, 7, 768, 4096, 4100, 12289, 16384])
def test_small_launches_get_a_block_per_row_with_hoisted_weights(dtype, norm, skip, hidden):
    vec = 4 if dtype == "float32" else 8
    io = dtype != "float32"
    small = kernels.skip_norm_variant(dtype, norm, skip, hidden, io, rows=1)
    assert small & VEC and small & HOIST and not small & WARP
    packs = hidden // vec
    assert PACKS[small & 15] == min(p for p in PACKS if p * 512 >= max(packs, 1))  # <= 512 threads per row
    assert small in kernels.skip_norm_candidates(dtype, norm, skip, hidden)  # built
    # the switch: rows x hidden <= 2^20 elements
    limit = kernels.skip_norm_small_elems() // hidden
    assert kernels.skip_norm_small_elems() == 2**20
    assert kernels.skip_norm_variant(dtype, norm, skip, hidden, io, rows=limit) == small
    large = kernels.skip_norm_variant(dtype, norm, skip, hidden, io)
    assert kernels.skip_norm_variant(dtype, norm, skip, hidden, io, rows=limit + 1) == large
    assert not large & HOIST


def test_rows_past_the_register_budget_take_the_long_path():
    # 32768 FP16 elements: 8 packs x 8 per thread x 512 threads exceeds 32 values per thread
    assert kernels.skip_norm_variant("float16", "layer", False, 32768, True, rows=1) == LONG | VEC
    assert kernels.skip_norm_variant("float16", "layer", False, 0, rows=1) == -1
