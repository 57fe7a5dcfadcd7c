"""GroupNorm's plan (issue 16 item 1) on the CPU: groupNormPlan is a pure function of the shape,
dtype, skip mode and a GPU's description, so the path and split it picks for an H200 (one launch with
thread-block clusters) or an older GPU (two launches) are checked here without a GPU."""

from __future__ import annotations

import functools
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


# The resident design's plans on a described H100/H200 (132 SMs, 227 KB opt-in less the static 1 KB)
RESIDENT_H200 = dict(sms=132, smem_per_block=232448 - 1024)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("shape", [(2, 320, 64, 64), (8, 320, 64, 64), (2, 1280, 16, 16), (2, 1280, 8, 8),
                                   (2, 2560, 8, 8), (8, 640, 32, 32), (8, 960, 32, 32), (1, 320, 64, 64),
                                   (1, 128, 1024, 1024), (3, 96, 7, 7)])
@pytest.mark.parametrize("described", [True, False])
def test_channels_last_ranges_stay_inside_a_sample(dtype, shape, described):
    """Channels-last, no CTA's range of pixels meets two samples where rounding the pixels per CTA up
    to a divisor of a sample's pixels costs at most half as much again (fused on the described GPU,
    and the two launches)."""
    n, c, spatial = shape[0], shape[1], math.prod(shape[2:])
    dev = RESIDENT_H200 if described else None
    plan = group_norm.resident_plan(n, c, spatial, 32, dtype, "none", "channels_last", configured=False, device=dev)
    grid, per, resident, fused, narrow, cluster = plan
    if not group_norm.channels_last_ok(dtype, c):  # FP32 2560 channels: 640 packs a pixel, past 512 threads
        assert (grid, per) == (0, 0)
        return
    assert grid == math.ceil(n * spatial / per) and 0 <= resident <= per and fused == described and not narrow
    assert cluster == 0 and grid <= (132 if described else 528)
    if n > 1 and per < spatial:
        assert spatial % per == 0, (shape, per)  # every range inside one sample
    # channels-first is left as it was: ranges of elements across groups
    cf = group_norm.resident_plan(n, c, spatial, 32, dtype, "none", "channels_first", configured=False, device=dev)
    assert cf[0] == math.ceil(n * c * spatial / cf[1])


def test_the_plan_is_a_pure_function_of_the_described_gpu():
    a = group_norm.resident_plan(2, 320, 4096, 32, "float16", "none", "channels_last", configured=False,
                                 device=RESIDENT_H200)
    assert a == (128, 64, 64, True, False, 0)  # 64 of a sample's 4096 pixels per CTA, all of them on chip
    small = group_norm.resident_plan(2, 320, 4096, 32, "float16", "none", "channels_last", configured=False,
                                     device=dict(sms=84, smem_per_block=101376 - 1024))
    assert small[3] and small[1] == 128 and small[0] == 64  # 98 pixels per CTA would straddle: 128 divide 4096
    odd = group_norm.resident_plan(2, 320, 9216, 32, "float16", "none", "channels_last", configured=False,
                                   device=RESIDENT_H200)  # 96x96: 140 pixels per CTA -> 144, a divisor
    assert odd[1] == 144 and odd[0] == 128


@pytest.mark.parametrize("dtype, shape, skip, want", [
    ("float16", (1, 1280, 64), "none", (32, 2560, 2560)),  # a 5 KB group per CTA, all on chip
    ("float16", (2, 320, 4096), "none", (64, 40960, 40960)),  # 80 KB groups still fit
    ("float32", (2, 320, 4096), "full", (64, 40960, 28916)),  # x and skip: 320 KB a group, 226 KB staged
    ("bfloat16", (32, 1280, 64), "none", (512, 5120, 5120)),  # 1024 groups: two per CTA (528 at most)
    ("float16", (3, 96, 49), "per_channel", (96, 147, 147)),  # odd: single elements, not 16-byte packs
])
def test_whole_segment_plans_hold_whole_groups(dtype, shape, skip, want):
    """Whole-segment plans (one launch, a CTA barrier, no cooperative launch): each CTA's range whole
    groups channels-first (whole samples channels-last), as many units on chip as its shared memory holds."""
    n, c, spatial = shape
    grid, per, resident, fused, narrow, cluster = group_norm.resident_plan(
        n, c, spatial, 32, dtype, skip, "channels_first", configured=False, device=RESIDENT_H200, whole_segments=True)
    assert (grid, per, resident) == want and fused and not narrow and not cluster
    assert per % (c // 32 * spatial) == 0 and grid == math.ceil(n * c * spatial / per)
    cl = group_norm.resident_plan(2, 320, 4096, 32, dtype, skip, "channels_last", configured=False,
                                  device=RESIDENT_H200, whole_segments=True)
    windows = 16 if dtype == "float32" else 8  # windows of 20 / 40 channels: whole 16-byte packs
    assert cl[:2] == (2 * windows, 4096) and 0 < cl[2] < 4096 and cl[3]  # a sample's window per CTA, what fits
    none = group_norm.resident_plan(n, c, spatial, 32, dtype, skip, "channels_first", configured=False,
                                    whole_segments=True)  # no device described: no such plan
    assert none[0] == 0


@pytest.mark.parametrize("dtype, shape, skip, ctas, want", [
    ("float16", (2, 320, 4096), "none", 2, (128, 20480, 20480)),  # SD batch 2: 64 groups of 80 KB, 40 KB a CTA
    ("float16", (1, 256, 65536), "none", 8, (256, 65536, 65536)),  # VAE 256x256: 1 MB groups, 128 KB a CTA
    ("float16", (1, 128, 262144), "none", 8, (256, 131072, 115664)),  # VAE 512x512: 256 KB a CTA, 226 KB staged
    ("float32", (2, 320, 4096), "full", 4, (256, 10240, 10240)),  # x and skip: 80 KB a CTA
    ("float16", (3, 96, 49), "per_channel", 3, (288, 49, 49)),  # odd: single elements, any cluster size
    ("float16", (2, 320, 4096), "none", 3, (0, 0, 0)),  # 40960 is not 3 x 16-byte packs
    ("float16", (8, 320, 4096), "none", 4, (0, 0, 0)),  # 1024 CTAs: past the workspace's 528
    ("float16", (2, 320, 4096), "none", 16, (0, 0, 0)),  # past the portable 8
    ("float16", (2, 320, 4096), "none", 1, (0, 0, 0)),  # one CTA a group: the whole-segment plan
    ("float16", (2, 2560, 64), "none", 2, (128, 2560, 2560)),  # 2 x 32 x 2 CTAs
])
def test_cluster_plans_cut_each_group_into_one_cluster(dtype, shape, skip, ctas, want):
    """Cluster plans (one launch, a cluster barrier): each channels-first group exactly `ctas` ranges, the
    CTAs of one thread-block cluster, as much of each on chip as a CTA's shared memory holds; none without a
    described device."""
    n, c, spatial = shape
    plan = group_norm.resident_plan(n, c, spatial, 32, dtype, skip, "channels_first", configured=False,
                                    device=RESIDENT_H200, cluster=ctas)
    assert plan[:3] == want
    if want[0]:
        assert plan[3:] == (True, False, ctas) and plan[1] * ctas == c // 32 * spatial
    none = group_norm.resident_plan(n, c, spatial, 32, dtype, skip, "channels_first", configured=False, cluster=ctas)
    assert none[0] == 0


@pytest.mark.parametrize("shape, ctas, want", [
    ((2, 320, 4096), 8, (128, 512, 512)),  # 8 windows of 40 channels a sample, each 8 ranges of 512 pixels
    ((2, 320, 4096), 2, (32, 2048, 2048)),
    ((2, 1280, 64), 8, (512, 8, 8)),  # 32 windows of one group: 2 x 32 x 8 CTAs
    ((1, 128, 262144), 8, (32, 32768, 3100)),  # 4 windows of 32 channels (64 bytes); 6 KB a pixel-row: part staged
    ((8, 320, 4096), 3, (0, 0, 0)),  # 4096 pixels are not 3 ranges
    ((8, 1280, 64), 4, (0, 0, 0)),  # 8 x 32 windows x 4: past 528 CTAs
])
def test_channels_last_cluster_plans_cut_each_window(shape, ctas, want):
    """Channels-last cluster plans: each sample's window of whole groups (the whole-segment plan's windows)
    cut into `ctas` ranges of its pixels, the CTAs of one cluster: grid = samples x windows x ctas."""
    n, c, spatial = shape
    plan = group_norm.resident_plan(n, c, spatial, 32, "float16", "none", "channels_last", configured=False,
                                    device=RESIDENT_H200, cluster=ctas)
    assert plan[:3] == want
    if want[0]:
        whole = group_norm.resident_plan(n, c, spatial, 32, "float16", "none", "channels_last", configured=False,
                                         device=RESIDENT_H200, whole_segments=True)
        assert plan[3:] == (True, False, ctas) and plan[0] == whole[0] * ctas and plan[1] * ctas == spatial


@pytest.mark.parametrize("shape, cs, dtype, want", [
    ((2, 1280, 64), 1280, "float16", (64, 64, 64)),  # a window per group: 40 channels, all on chip
    ((8, 1280, 64), 1280, "bfloat16", (256, 64, 64)),
    ((32, 1280, 64), 1280, "float16", (512, 64, 64)),  # 16 windows of 80: 32 x 32 would pass 528 CTAs
    ((2, 64, 49), 64, "float32", (8, 49, 49)),  # 64 groups of one channel: windows of 16 (64 bytes at least)
    ((2, 1280, 64), 1288, "float16", (2, 64, 64)),  # padded (HWC8 of 1288): no windows, a sample per CTA
    ((2, 3, 16), 3, "float16", (2, 16, 16)),  # 3 channels: no window is whole packs
])
def test_channels_last_whole_segment_plans_cut_channels_into_windows(shape, cs, dtype, want):
    """Channels-last whole-segment plans: a CTA per sample and window of whole groups (as many windows as
    keep each window whole 16-byte packs of 64 bytes or more, no pad and at most 528 CTAs), grid = samples
    x windows."""
    n, c, spatial = shape
    groups = 3 if c == 3 else (64 if c == 64 else 32)
    plan = group_norm.resident_plan(n, c, spatial, groups, dtype, "none", "channels_last", cs, configured=False,
                                    device=RESIDENT_H200, whole_segments=True)
    assert plan[:3] == want and plan[3] and not plan[4]


def test_fused_channels_last_plans_with_channel_windows():
    """Fused channels-last plans cut into channel windows (to measure): grid = ranges x windows within the
    GPU's CTAs, each range on chip where it fits; windows that are no whole groups of whole packs: none."""
    plan = functools.partial(group_norm.resident_plan, groups=32, dtype="float16", skip_mode="none",
                             layout="channels_last", configured=False, device=RESIDENT_H200)
    assert plan(2, 320, 4096, windows=0) == (128, 512, 512, True, False, 0)  # 8 windows of 40 channels x 16 ranges
    assert plan(2, 320, 4096, windows=8) == plan(2, 320, 4096, windows=0)
    assert plan(2, 320, 4096, windows=3) == plan(2, 320, 4096) == (128, 64, 64, True, False, 0)  # 3: no windows
    assert plan(2, 1280, 64, windows=0) == (32, 128, 128, True, False, 0)  # 16 KB a CTA: one range per window
    big = plan(1, 128, 1 << 18, windows=0)  # 4 windows of 32 channels (64 bytes a pixel at least)
    assert big[0] == 132 and big[1] * 33 >= 1 << 18 and 0 < big[2] < big[1]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_channels_last_picks_where_measured_faster(dtype):
    """H100 runs 13-14, channels-last 16-bit, no skip: whole groups per CTA (a sample's window of them) where a
    window is 32 KB or less and the grid one CTA per SM at most; else the fused plan cut into channel windows on
    one sample up to 5 MB and with windows of 120 channels or more up to 8 MB; else the fused plan (narrower
    windows on 2-8 samples, larger tensors, FP32, a skip, no windows)."""
    def plan(n, c, spatial, dtype=dtype, skip="none", stride=0, **kw):
        return group_norm.resident_plan(n, c, spatial, 32, dtype, skip, "channels_last", stride, configured=False,
                                        device=RESIDENT_H200, **kw)

    def pick(n, c, spatial, **kw):
        return plan(n, c, spatial, picked=True, **kw)

    for shape, grid in [((1, 1280, 64), 32), ((2, 1280, 64), 64), ((1, 1280, 256), 32), ((2, 2560, 64), 64)]:
        assert pick(*shape) == plan(*shape, whole_segments=True) and pick(*shape)[0] == grid, shape
    for shape in [(1, 1920, 256), (1, 640, 1024), (1, 320, 4096), (1, 640, 4096),  # windows of 40-120 KB
                  (2, 1920, 256), (2, 960, 1024), (8, 1920, 256)]:  # windows of 120 channels, to 8 MB
        assert pick(*shape) == plan(*shape, windows=0) != plan(*shape), shape
    for shape in [(8, 1280, 64), (2, 320, 4096), (2, 640, 1024), (1, 320, 16384), (1, 512, 16384), (8, 960, 1024)]:
        assert pick(*shape) == plan(*shape), shape  # 256 CTAs; 2 samples of 40-channel windows; past 5 / 8 MB
    assert pick(1, 1280, 64, dtype="float32") == plan(1, 1280, 64, dtype="float32")  # FP32: not measured
    assert pick(1, 1280, 64, skip="full") == plan(1, 1280, 64, skip="full")
    assert pick(1, 1280, 64, stride=1288) == plan(1, 1280, 64, stride=1288)  # padded: no windows
    assert plan(1, 320, 4096, windows=-1) == plan(1, 320, 4096) != pick(1, 320, 4096)  # -1: no windows, no pick
    # channels-first as before: whole groups per CTA where groupNormWholeSegmentsFirst
    cf = group_norm.resident_plan(2, 1280, 64, 32, dtype, configured=False, device=RESIDENT_H200, picked=True)
    assert cf == group_norm.resident_plan(2, 1280, 64, 32, dtype, configured=False, device=RESIDENT_H200,
                                          whole_segments=True)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_channels_first_cluster_picks_where_measured_faster(dtype):
    """H100 run 16, channels-first 16-bit, no skip: each group a cluster of 2 CTAs on 2-4 samples of 40 KB groups
    or more and on 5-8 samples of 128 KB or more, where the GPU runs clusters and a CTA holds its half of a group;
    whole groups per CTA on 3-4 samples to 64 KB; else as before."""
    h200 = dict(RESIDENT_H200, max_cluster=8)

    def plan(n, c, spatial, dtype=dtype, skip="none", device=h200, **kw):
        return group_norm.resident_plan(n, c, spatial, 32, dtype, skip, configured=False, device=device, **kw)

    def pick(n, c, spatial, **kw):
        return plan(n, c, spatial, picked=True, **kw)

    for shape in [(2, 320, 4096), (2, 640, 1024), (2, 960, 1024), (4, 320, 4096), (4, 640, 4096), (8, 640, 4096),
                  (2, 320, 16384)]:  # 80, 40, 60, 80, 160, 160, 320 KB groups
        assert pick(*shape) == plan(*shape, cluster=2) and pick(*shape)[5] == 2, shape
    assert pick(2, 320, 4096) == (128, 20480, 20480, True, False, 2)
    for shape in [(4, 640, 1024), (4, 960, 1024), (3, 640, 1024)]:  # 3-4 samples, 40-60 KB: whole groups per CTA
        assert pick(*shape) == plan(*shape, whole_segments=True), shape
    for shape in [(1, 320, 4096), (8, 320, 4096), (8, 640, 1024), (2, 512, 16384), (1, 128, 1 << 18)]:
        assert pick(*shape) == plan(*shape), shape  # one sample; 8 of 40-80 KB; 512 KB: a half not on chip
    assert pick(2, 320, 4096, dtype="float32") == plan(2, 320, 4096, dtype="float32")  # not measured
    assert pick(2, 320, 4096, skip="full") == plan(2, 320, 4096, skip="full")
    no_clusters = pick(2, 320, 4096, device=RESIDENT_H200)  # a GPU without clusters: the cooperative plan
    assert no_clusters == plan(2, 320, 4096, device=RESIDENT_H200) and not no_clusters[5]


def test_channels_first_takes_the_resident_design_where_it_measured_faster():
    """H100 run 3: fused resident beat split on 1-2 samples for GroupNorm from 5 MB; run 13: GroupNorm+SiLU
    too, in 16-bit (FP32 from 32 MB, as run 3 measured); runs 13-15: on 8 samples, 16-bit, where groups are
    64-128 KB up to 32 MB (8x320x64x64); run 7: whole groups per CTA beat it on 1-8 samples where groups are
    32 KB or less; the split design everywhere else (a skip, other groups of more samples, smaller tensors)."""
    rf = group_norm.resident_first
    assert rf(2, 320, 4096, 32, "float16") and rf(1, 640, 4096, 32, "bfloat16") and rf(1, 128, 1 << 20, 32, "float16")
    assert rf(1, 320, 4096, 32, "float32")  # 5.2 MB in FP32
    assert not rf(1, 320, 4096, 32, "float16")  # 2.6 MB
    assert rf(2, 320, 4096, 32, "float16", activation="silu") and rf(1, 640, 4096, 32, "bfloat16", activation="silu")
    assert not rf(1, 320, 4096, 32, "float16", activation="silu")  # 2.6 MB
    assert not rf(2, 320, 4096, 32, "float32", activation="silu")  # 10.5 MB in FP32
    assert rf(1, 256, 65536, 32, "float16", activation="silu") and rf(1, 256, 65536, 32, "float32", activation="silu")
    assert not rf(2, 320, 4096, 32, "float16", "full") and not rf(8, 320, 4096, 32, "float16", "full")
    # runs 13-15, 3-8 samples, 16-bit: 64-128 KB groups up to 32 MB (8x320x64x64: 80 KB, 21 MB; 4 samples: 10.5 MB)
    assert rf(8, 320, 4096, 32, "float16") and rf(8, 320, 4096, 32, "bfloat16", activation="silu")
    assert rf(4, 320, 4096, 32, "float16") and rf(3, 320, 4096, 32, "bfloat16")
    assert not rf(8, 640, 1024, 32, "float16") and not rf(8, 960, 1024, 32, "float16")  # 40 KB, 60 KB
    assert rf(8, 448, 4096, 32, "float16") and not rf(8, 640, 4096, 64, "float16")  # 80 KB groups, but 42 MB
    assert not rf(16, 320, 4096, 32, "float16") and not rf(8, 320, 4096, 32, "float32")  # not measured
    assert not rf(2, 320, 4096, 7, "float16") and not rf(0, 320, 4096, 32, "float16")  # no such shape
    # H100 run 7: whole groups per CTA where a group is 32 KB or less (1-8 samples, no skip), any size
    assert rf(2, 1280, 64, 32, "float16") and rf(1, 1280, 256, 32, "bfloat16", activation="silu")
    assert rf(2, 640, 256, 32, "float32") and not rf(2, 1280, 256, 32, "float32")  # 20 KB; 40 KB in FP32
    assert rf(8, 1920, 256, 32, "float16") and not rf(16, 1280, 64, 32, "float16")  # 8 samples; 16 not measured
    # run 16: each group a cluster of 2 CTAs (2-4 samples from 40 KB, 5-8 from 128 KB); whole groups per CTA on
    # 3-4 samples to 64 KB
    assert rf(2, 640, 1024, 32, "float16") and rf(4, 640, 4096, 32, "bfloat16") and rf(8, 640, 4096, 32, "float16")
    assert rf(4, 640, 1024, 32, "float16", activation="silu") and rf(3, 960, 1024, 32, "bfloat16")
    assert not rf(8, 640, 4096, 32, "float32") and not rf(5, 640, 1024, 32, "float16")  # FP32; 5 samples of 40 KB
    # without a cluster plan (a GPU without clusters), where only the cluster rule said so: the split design
    assert not rf(2, 640, 1024, 32, "float16", clusters=False) and not rf(8, 640, 4096, 32, "float16", clusters=False)
    assert rf(2, 320, 4096, 32, "float16", clusters=False) and rf(4, 640, 1024, 32, "float16", clusters=False)
    assert not rf(2, 1280, 64, 32, "float16", "per_channel") and not rf(2, 1280, 64, 32, "float16", "full")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_plans_for_two_ctas_per_sm(dtype):
    """Planned for two CTAs per SM (each a share of the SM's shared memory): twice the CTAs, 16-bit
    channels-last in 8-byte packs (narrow: 64 registers, two CTAs fit), channels-first and FP32 as they are."""
    two = dict(configured=False, device=RESIDENT_H200, ctas_per_sm=2)
    for shape in [(2, 320, 4096), (8, 320, 4096), (2, 640, 1024), (2, 1280, 256)]:
        n, c, spatial = shape
        one = group_norm.resident_plan(n, c, spatial, 32, dtype, "none", "channels_last", configured=False,
                                       device=RESIDENT_H200)
        grid, per, resident, fused, narrow, cluster = group_norm.resident_plan(n, c, spatial, 32, dtype, "none",
                                                                               "channels_last", **two)
        assert fused and not cluster and narrow == (dtype != "float32"), (shape, narrow)
        assert grid <= 264 and grid == math.ceil(n * spatial / per) and 0 < resident <= per
        assert grid >= one[0] and spatial % per == 0, (shape, grid, per, one)
        cf = group_norm.resident_plan(n, c, spatial, 32, dtype, "none", "channels_first", **two)
        assert cf[3] and not cf[4] and cf[0] <= 264
    # a channels-last row of 16-bit packs that is not whole 16-byte packs: not narrow, as before
    odd = group_norm.resident_plan(2, 100, 4096, 4, "float16", "none", "channels_last", **two)
    assert odd[3] and not odd[4]
    # 2560 channels are 640 packs of 4 a pixel, past a CTA's 512 threads: not narrow (its 16-byte packs)
    wide = group_norm.resident_plan(2, 2560, 64, 32, "float16", "none", "channels_last", **two)
    assert wide[0] > 0 and wide[3] and not wide[4]


def test_choose_composes_the_plugins_rules():
    """choose() (groupNormChoose: what the plugin, trtplugins.torch and the C entry all run) on this
    machine's GPU or none: channels-first the fused resident plan where resident_first() and the plan is
    fused, else the split plan the plugin configures; channels-last the configured resident plan."""
    shapes = [(2, 320, 4096, "float16", "none", "none"), (2, 1280, 64, "float16", "none", "silu"),
              (8, 640, 4096, "bfloat16", "none", "none"), (2, 320, 4096, "float32", "full", "none"),
              (1, 128, 1 << 18, "float16", "none", "silu")]
    for n, c, spatial, dtype, mode, act in shapes:
        resident, split = group_norm.choose(n, c, spatial, 32, dtype, mode, act)
        rp = group_norm.resident_plan(n, c, spatial, 32, dtype, mode)
        first = group_norm.resident_first(n, c, spatial, 32, dtype, mode, act) and rp[3] and (
            rp[5] or group_norm.resident_first(n, c, spatial, 32, dtype, mode, act, clusters=False))
        assert resident == (rp if first else None)
        assert split == ((0, 0, False) if first else group_norm.plan(n, 32, c // 32 * spatial, dtype, mode))
        if resident is None:
            assert split[0] >= 1 and split[1] >= 1
        cl, cl_split = group_norm.choose(n, c, spatial, 32, dtype, mode, act, layout="channels_last", stride=c)
        assert cl == group_norm.resident_plan(n, c, spatial, 32, dtype, mode, "channels_last", c)
        assert cl_split == (0, 0, False)
