"""Where GroupNorm's resident plans run each group held in registers (groupNormInRegisters), on the CPU: a pure
function of the shape, the plan, whether the launch is lean and a described GPU."""

from __future__ import annotations

import pytest

from trtplugins.ops import group_norm

pytestmark = pytest.mark.usefixtures("kernel_library")

# an H100 / H200 as the resident design sees it: 132 SMs, the opt-in less the static 1 KB, clusters of up to 8
H200 = dict(sms=132, smem_per_block=232448 - 1024, max_cluster=8)
NONE = (0, 0, 1, 0, 0)  # not in registers


def picked(n, c, spatial, dtype="float16", layout="channels_first", device=H200, **kw):
    return group_norm.resident_plan(n, c, spatial, 32, dtype, layout=layout, configured=False, device=device,
                                    picked=True, **kw)


def regs(n, c, spatial, plan, dtype="float16", layout="channels_first", device=H200, **kw):
    return group_norm.in_registers(n, c, spatial, 32, plan, device, dtype, layout, **kw)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sd_batch_2_latents_run_in_registers(dtype):
    # 8x8 latents: a CTA per group (the whole-segment pick), 320 packs of 8 in one pass of 320 threads
    assert regs(2, 1280, 64, picked(2, 1280, 64, dtype), dtype) == (1, 8, 1, 320, 320)
    # channels-last: 5 packs of a pixel's 40 group channels, 64 pixels, a CTA per group
    cl = picked(2, 1280, 64, dtype, "channels_last")
    assert regs(2, 1280, 64, cl, dtype, "channels_last") == (1, 8, 1, 320, 64)
    # 64x64 latents: the cluster pick; 80 KB groups held by 4 CTAs of 512 threads, 4 packs each (1280 a CTA):
    # 64 groups x 4 = 256 CTAs, one wave at 2 per SM
    plan = picked(2, 320, 4096, dtype)
    assert plan[5] == 2 and regs(2, 320, 4096, plan, dtype) == (4, 8, 4, 512, 512)


def test_clusters_past_one_wave_stay_staged():
    plan = picked(4, 320, 4096)  # 128 groups x 4 CTAs: 512 > 2 x 132
    assert plan[5] == 2 and regs(4, 320, 4096, plan) == NONE
    assert regs(4, 320, 4096, plan, device=dict(H200, sms=264))[:3] == (4, 8, 4)  # twice the SMs: one wave


def test_clusters_need_the_gpu_to_run_them():
    plan = picked(2, 320, 4096)
    assert regs(2, 320, 4096, plan, device=dict(H200, max_cluster=2)) == NONE  # the group needs 4 CTAs
    # without clusters the pick is the cooperative plan over the GPU, which this kernel does not run
    plain = picked(2, 320, 4096, device=dict(H200, max_cluster=0))
    assert plain[5] == 0 and regs(2, 320, 4096, plain, device=dict(H200, max_cluster=0)) == NONE
    # whole groups per CTA need no cluster
    assert regs(2, 1280, 64, picked(2, 1280, 64), device=dict(H200, max_cluster=0))[:3] == (1, 8, 1)


def test_fp32_takes_more_packs_per_thread():
    assert regs(2, 1280, 64, picked(2, 1280, 64, "float32"), "float32") == (2, 4, 1, 512, 512)


def test_channels_last_groups_of_half_packs():
    # 640 channels: groups of 20, 5 packs of 4 per pixel (8 bytes); 64 pixels a CTA per group
    plan = group_norm.resident_plan(2, 640, 64, 32, "float16", layout="channels_last", configured=False, device=H200,
                                    whole_segments=True)
    assert regs(2, 640, 64, plan, layout="channels_last") == (1, 4, 1, 320, 64)
    # 16x16 pixels of 15 packs (1920 channels): 8 passes of 34 pixels, past 4 packs a thread
    plan = group_norm.resident_plan(2, 1920, 256, 32, "float16", layout="channels_last", configured=False,
                                    device=H200, whole_segments=True)
    assert regs(2, 1920, 256, plan, layout="channels_last") == NONE


def test_not_lean_padded_or_two_launches():
    plan = picked(2, 1280, 64)
    assert regs(2, 1280, 64, plan, lean=False) == NONE  # a bias or a sum output: the resident kernel
    pad = group_norm.resident_plan(2, 1280, 64, 32, "float16", layout="channels_last", stride=1288, configured=False,
                                   device=H200, whole_segments=True)
    assert pad[0] and regs(2, 1280, 64, pad, layout="channels_last", stride=1288) == NONE  # a pad in each pixel
    two = group_norm.resident_plan(2, 1280, 64, 32, "float16", configured=False)
    assert not two[3] and regs(2, 1280, 64, two) == NONE
    assert regs(2, 1280, 64, plan) == regs(2, 1280, 64, plan)  # pure
