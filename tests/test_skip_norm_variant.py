"""SkipNorm's variant choice on the CPU: a pure function of (dtype, norm, skip, hidden, weight kind,
small launch or not), so the pair a plugin picks when configured is checked here without a GPU."""

from __future__ import annotations

import pytest

from trtplugins.ops import skip_norm

HOIST, VEC, WARP, LONG, LOOP = 32, 64, 16, 15, 6
PACKS = (1, 2, 3, 4, 6, 8)  # packs per thread by variant index (variants.cuh kNvs)


pytestmark = pytest.mark.usefixtures("kernel_library")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("norm,skip", [("layer", False), ("layer", True), ("rms", False), ("rms", True)])
@pytest.mark.parametrize("hidden", [1, 7, 768, 4096, 4100, 12289, 16384])
def test_small_launches_get_a_block_per_row_with_hoisted_weights(dtype, norm, skip, hidden):
    vec = 4 if dtype == "float32" else 8
    io = dtype != "float32"
    small = skip_norm.variant(dtype, norm, skip, hidden, io, rows=1)
    assert small & VEC and small & HOIST and not small & WARP
    packs = hidden // vec
    assert PACKS[small & 15] == min(p for p in PACKS if p * 512 >= max(packs, 1))  # <= 512 threads per row
    assert small in skip_norm.candidates(dtype, norm, skip, hidden)  # built
    # the switch: rows x hidden <= 2^20 elements
    limit = skip_norm.small_elems() // hidden
    assert skip_norm.small_elems() == 2**20
    assert skip_norm.variant(dtype, norm, skip, hidden, io, rows=limit) == small
    large = skip_norm.variant(dtype, norm, skip, hidden, io)
    assert skip_norm.variant(dtype, norm, skip, hidden, io, rows=limit + 1) == large
    assert not large & HOIST or LOOP <= large & 15 < LOOP + 3  # looped variants: HOIST is the row's L2 prefetch


def test_rows_past_the_register_budget_take_the_long_path():
    # 32768 FP16 elements: 8 packs x 8 per thread x 512 threads exceeds 32 values per thread
    assert skip_norm.variant("float16", "layer", False, 32768, True, rows=1) == LONG | VEC
    assert skip_norm.variant("float16", "layer", False, 0, rows=1) == -1


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_long_16bit_rows_take_the_looped_path(dtype):
    # about 4 packs per thread: 128 threads up to 640 packs (LayerNorm 5120), 256 to 1024 (rows not whole
    # packs: 1536), then 512; every row prefetched into L2 before its first read (HOIST on looped variants)
    loop = lambda threads: VEC | HOIST | (LOOP + (threads // 128).bit_length() - 1)  # noqa: E731
    for hidden, threads in ((2048, 128), (4096, 128), (5120, 128), (8192, 256), (12288, 512), (16384, 512),
                            (4100, 128), (5121, 128), (12289, 256), (16385, 512)):
        for io in (True, False):
            v = skip_norm.variant(dtype, "layer", False, hidden, io)
            assert v == loop(threads), (hidden, io, v)
            assert v in skip_norm.candidates(dtype, "layer", False, hidden)  # built
    assert skip_norm.variant(dtype, "layer", True, 12288, True) == loop(512)
    assert skip_norm.variant(dtype, "rms", True, 12289) == loop(512)
    assert skip_norm.variant(dtype, "layer", True, 4100) == loop(128)
    assert skip_norm.variant(dtype, "layer", True, 1024, True) & 15 < LOOP
    # short rows and FP32 keep the register rows
    assert skip_norm.variant(dtype, "layer", False, 768, True) & 15 < LOOP
    assert skip_norm.variant("float32", "layer", False, 4096) & 15 < LOOP


EDGES = (128, 256, 384, 512, 768, 2048, 3072, 4096, 5120, 6144, 8192, 12288, 16384)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("norm,skip", [("layer", False), ("layer", True), ("rms", False), ("rms", True)])
def test_every_row_length_picks_a_built_kernel(dtype, norm, skip):
    # the build instantiates only the kernels pick() returns near its boundaries (variants.cuh built())
    hiddens = set(range(1, 80)) | {e + d for e in EDGES for d in range(-9, 10)} | {20000, 32768, 40001}
    for hidden in sorted(hiddens):
        built = set(skip_norm.candidates(dtype, norm, skip, hidden))
        for io in (False, True):
            for rows in (1, None):
                v = skip_norm.variant(dtype, norm, skip, hidden, io, rows)
                assert v in built, (hidden, io, rows, v)


def test_the_aot_variant_is_named_by_the_library_and_picked_only_with_a_cubin():
    """kSkipNormAotVariant (the Triton kernels built ahead of time): past the bit-encoded variants, read
    from the library; picked (and a candidate) only where the build has a cubin for this device that
    triton_picks.json marks: none here (no GPU, and the default build embeds none), so the plugin's pick
    is the CUDA kernels' pick."""
    aot = skip_norm.aot_variant()
    assert aot == 256
    for dtype in ("float32", "float16", "bfloat16"):
        for hidden in (768, 4096, 16384):
            for io in {False, dtype != "float32"}:
                v = skip_norm.variant(dtype, "layer", False, hidden, io)
                assert v != aot and v == skip_norm.variant(dtype, "layer", False, hidden, io, aot=False)
            assert aot not in skip_norm.candidates(dtype, "rms", True, hidden)
            for skip, output_sum in ((True, False), (False, True)):  # the sum output is the launch's own choice
                v = skip_norm.variant(dtype, "layer", skip, hidden, output_sum=output_sum)
                assert v == skip_norm.variant(dtype, "layer", skip, hidden, aot=False)
                assert aot not in skip_norm.candidates(dtype, "layer", skip, hidden, output_sum=output_sum)
