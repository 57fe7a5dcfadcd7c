"""GroupNorm's plan (issue 16 item 1) on the CPU: groupNormPlan is a pure function of the shape,
dtype, skip mode and a GPU's description, so the path and split it picks for an H200 (one launch with
thread-block clusters) or an older GPU (two launches) are checked here without a GPU."""

from __future__ import annotations

import math

import pytest

from trtplugins.ops import group_norm

# cudaDeviceGetAttribute's answers on an H200 (the opt-in less the kernel's static shared memory bound)
H200 = dict(sms=132, smem_per_sm=233472, smem_per_block=232448 - 256, max_cluster=16)
# a GPU with 100 KB of shared memory per SM (sm_120-like)
SMALL_SMEM = dict(sms=84, smem_per_sm=102400, smem_per_block=101376 - 256, max_cluster=16)
SD_SHAPES = [(2, 320, 64, 64), (2, 640, 32, 32), (8, 640, 64, 64), (2, 320, 128, 128), (2, 1280, 32, 32)]


pytestmark = pytest.mark.usefixtures("kernel_library")


def group_size(shape, groups=32):
    return shape[1] // groups * math.prod(shape[2:])


def two_launches(n, groups, size):
    """The two-launch split: ~528 CTAs in all, chunks of >= 4096 elements, multiples of 256."""
    chunks = min(math.ceil(528 / (n * groups)), max(size // 4096, 1))
    chunk_len = math.ceil(math.ceil(size / chunks) / 256) * 256
    return math.ceil(size / chunk_len), chunk_len, False


def check_split(plan, size):
    chunks, chunk_len, _ = plan
    assert chunk_len % 256 == 0 and chunks == math.ceil(size / chunk_len), plan


def clusters_pay(shape, dtype):
    """Where the H200 sweep measured clusters faster than two launches: FP32 with >= 256 groups."""
    return dtype == "float32" and shape[0] * 32 >= 256


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("skip", ["none", "full", "per_channel"])
def test_sd_shapes_on_an_h200(dtype, skip):
    per_elem = (4 if dtype == "float32" else 2) * (2 if skip == "full" else 1)
    for shape in SD_SHAPES:
        size = group_size(shape)
        plan = group_norm.plan(shape[0], 32, size, dtype, skip, device=H200)
        assert group_norm.plan(shape[0], 32, size, dtype, skip, device=H200) == plan  # pure
        if not clusters_pay(shape, dtype):
            assert plan == two_launches(shape[0], 32, size), (shape, plan)
            continue
        check_split(plan, size)
        assert plan[2] and plan[0] in (1, 2, 4, 8), plan  # portable sizes: every SD group fits 8 CTAs' shared memory
        assert plan[1] * per_elem <= H200["smem_per_block"], plan
        assert shape[0] * 32 * plan[0] >= H200["sms"], plan  # every SM busy


def test_cluster_sizes_on_an_h200():
    """Chunks leave room for 4 CTAs per SM, and >= 3 CTAs per SM in all where 8 CTAs per group give them;
    16-bit data and fewer than 256 groups take two launches (measured faster)."""
    assert group_norm.plan(8, 32, 81920, "float32", device=H200) == (8, 10240, True)
    assert group_norm.plan(8, 32, 81920, "float16", device=H200) == two_launches(8, 32, 81920)
    assert group_norm.plan(2, 32, 40960, "float32", device=H200) == two_launches(2, 32, 40960)
    assert group_norm.plan(16, 32, 2560, "float32", device=H200) == (1, 2560, True)


def test_no_clusters_is_two_launches():
    for shape in SD_SHAPES + [(1, 64, 128, 128), (2, 64, 7, 7), (1, 32, 1, 1)]:
        size = group_size(shape, 32 if shape[1] % 32 == 0 else 1)
        for device in (False, dict(H200, max_cluster=0), dict(H200, sms=0)):
            assert group_norm.plan(shape[0], 32, size, "float16", device=device) == two_launches(
                shape[0], 32, size), (shape, device)


def test_small_and_huge_groups():
    # one element per group: a cluster of one CTA each
    assert group_norm.plan(256, 1, 1, "float32", device=H200) == (1, 256, True)
    assert group_norm.plan(1, 32, 1, "float32", device=H200) == two_launches(1, 32, 1)  # few groups
    # one group of 1M elements: 16 CTAs could hold it, but two launches spread it over 256 CTAs
    assert group_norm.plan(1, 1, 1 << 20, "float16", device=H200) == two_launches(1, 1, 1 << 20)
    # groups beyond 16 CTAs' shared memory: two launches
    assert group_norm.plan(64, 4, 1 << 22, "float32", device=H200) == two_launches(64, 4, 1 << 22)


def test_sixteen_only_when_eight_cannot_hold_a_group():
    size = group_size((8, 320, 128, 128))  # FP32 with a full skip: 1.25 MB per group
    assert group_norm.plan(8, 32, size, "float32", "full", device=H200) == (8, 20480, True)
    assert group_norm.plan(8, 32, size, "float32", "full", device=SMALL_SMEM) == (16, 10240, True)
    portable = dict(SMALL_SMEM, max_cluster=8)
    assert group_norm.plan(8, 32, size, "float32", "full", device=portable) == two_launches(8, 32, size)


def test_a_gpu_with_small_clusters():
    """A described GPU whose clusters stop at 4 CTAs: never larger, two launches when 4 cannot hold a group."""
    small = dict(H200, max_cluster=4)
    assert group_norm.plan(8, 32, 81920, "float32", device=small) == (4, 20480, True)
    big = group_size((8, 320, 128, 128))
    assert group_norm.plan(8, 32, big, "float32", "full", device=small) == two_launches(8, 32, big)
