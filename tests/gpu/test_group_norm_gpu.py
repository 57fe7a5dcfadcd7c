"""GroupNorm (issue 16 item 1) on the GPU: the bare kernel against trtplugins.ops.group_norm.reference over a shape
grid (SD shapes, 1 element per group, num_groups 1 and = C, odd spatial sizes, rank 3 and 5, a
zero batch), every fused variant, values near the FP16 limit, NaN confined to its group, unaligned
pointers, in place; each through both paths, forced: the two launches, and one launch with
thread-block clusters of 1, 2, 4, 8 and 16 CTAs (sm_90+; kernels.group_norm_candidates); the plan
the plugin picks on this GPU; and the plugin's enqueue (both majors, both interfaces, with the
workspace getWorkspaceSize asks for) bit-identical to the bare kernel.

Tolerances as tests/gpu/test_kernels.py (check()): FP32 1e-5 x scale, FP16 2e-3 x scale + 2e-3 |ref|,
BF16 8x that; scale = max(max|ref|, 1). Two launches: FP32 sums of s - K (K the group's first value)
over chunks, merged in a fixed order; clusters: per-thread two-pass mean and M2, Chan-merged in a
fixed order: FP32 rounding of ~10^5-term statistics stays ~1e-6 relative either way.

GPU-side selections: `-k "group_norm_kernel or sd_shapes"` (both paths, every plan), `-k cluster`
(the cluster-only checks), `-k plugin` (enqueue == bare kernel).
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from trtplugins import kernels
from trtplugins.ops import group_norm

from .test_kernels import DTYPES, alloc, check, f64, randn, tdtype

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from plugin_harness import BF16, FLOAT, HALF  # noqa: E402

# (shape, num_groups): SD shapes, 1 element per group, one group, a group per channel, odd spatial
# sizes (scalar path), rank 3 and 5, a group of 1M elements (many chunks), an empty batch
SHAPES = [
    ((2, 320, 64, 64), 32),
    ((2, 1280, 8, 8), 32),
    ((1, 32, 1, 1), 32),
    ((2, 64, 7, 7), 1),
    ((2, 64, 7, 7), 64),
    ((3, 48, 5, 3), 16),
    ((2, 16, 33), 4),
    ((1, 8, 3, 4, 5), 2),
    ((1, 64, 128, 128), 1),
    ((0, 32, 4, 4), 8),
]
# name -> (bias, beta, skip: None / "full" / "channel", silu, sum output)
VARIANTS = {
    "gamma+beta": (False, True, None, False, False),
    "bias+silu": (True, True, None, True, False),
    "skip+sum": (False, True, "full", False, True),
    "temb+bias+silu+sum": (True, True, "channel", True, True),
}


def make(torch, gen, shape, dt, variant, offset=0):
    has_bias, has_beta, skip_kind, _, _ = VARIANTS[variant]
    c = shape[1]
    x = randn(torch, gen, shape, dt, offset, scale=2.0, shift=3.0)  # offset mean: the shifted sums matter
    skip = None
    if skip_kind == "full":
        skip = randn(torch, gen, shape, dt, offset)
    elif skip_kind == "channel":
        skip = randn(torch, gen, (shape[0], c) + (1,) * (len(shape) - 2), dt, offset)
    gamma = randn(torch, gen, (c,), torch.float32, scale=0.5, shift=1.0)
    beta = randn(torch, gen, (c,), torch.float32, scale=0.5) if has_beta else None
    bias = randn(torch, gen, (c,), torch.float32, scale=0.5) if has_bias else None
    return x, skip, gamma, beta, bias


def ref_of(x, skip, gamma, beta, bias, groups, act):
    return group_norm.reference(f64(x), None if skip is None else f64(skip), num_groups=groups, gamma=f64(gamma),
                                beta=None if beta is None else f64(beta), bias=None if bias is None else f64(bias),
                                activation_name=act, epsilon=1e-5, output_sum=True)


def run_kernel(torch, dt, shape, inputs, groups, act, with_sum, offset=0, plan=None, out=None):
    """(y, s): s None without the sum. plan: one to force, which must be the one that runs."""
    x, skip, gamma, beta, bias = inputs
    y = alloc(torch, shape, dt, offset) if out is None else out
    s = alloc(torch, shape, dt, offset) if with_sum else None
    _, ran = group_norm.kernel(x, skip, num_groups=groups, gamma=gamma, beta=beta, bias=bias, activation=act,
                                epsilon=1e-5, output_sum=with_sum, out=y, sum_out=s, plan=plan, return_plan=True)
    torch.cuda.synchronize()
    if plan is not None and 0 not in shape:
        assert ran == tuple(plan), f"forced {plan}, ran {ran}"
    return y, s


def skip_mode(shape, skip):
    return "none" if skip is None else "full" if tuple(skip.shape) == tuple(shape) else "per_channel"


def plans(shape, groups, dtype, skip=None):
    """Every plan to force for a shape on this GPU: the two launches, clusters of 1..16 CTAs."""
    if 0 in shape:
        return [(0, 0, False)]
    size = shape[1] // groups * int(np.prod(shape[2:]))
    return group_norm.candidates(shape[0], groups, size, dtype, skip_mode(shape, skip))


def tag(plan):
    return "cluster" if plan[2] else "two-launch"


def has_clusters(torch):
    """Whether this GPU runs the cluster path; on sm_90+ it must (the build holds an sm_90+ image)."""
    yes = group_norm.device()["max_cluster"] > 0
    assert yes == (torch.cuda.get_device_capability()[0] >= 9), group_norm.device()
    return yes


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_group_norm_kernel(torch, record, variant, dtype):
    """The shape grid through the plugin's plan and every other plan, forced (two launches, clusters
    of 1..16 CTAs; the plan that ran is checked)."""
    _, _, _, silu, with_sum = VARIANTS[variant]
    act = "silu" if silu else "none"
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"gn{variant}{dtype}".encode()))
    dt = tdtype(torch, dtype)
    cases = [(s, g, 0) for s, g in SHAPES] + [((2, 64, 8, 8), 8, 1), ((2, 96, 7, 7), 32, 1)]
    for shape, groups, offset in cases:  # offset 1: unaligned pointers (scalar path)
        inputs = make(torch, gen, shape, dt, variant, offset)
        ry, rs = ref_of(*inputs, groups, act)
        for plan in [None] + plans(shape, groups, dtype, inputs[1]):
            y, s = run_kernel(torch, dt, shape, inputs, groups, act, with_sum, offset, plan=plan)
            name = variant if plan is None else f"{variant}:{tag(plan)}"
            at = shape + (f"G{groups}",) + ((str(plan),) if plan else ()) + ((f"+{offset}",) if offset else ())
            check(record, "group_norm", name, dtype, at, y, ry)
            if with_sum:
                check(record, "group_norm", f"{name}:sum", dtype, at, s, rs)


# the SD UNet shapes of the benchmark (32 groups), as the UNet uses them: plain, with the time
# embedding + bias + SiLU + sum, with a residual (full skip) + sum
SD_SHAPES = [(2, 320, 64, 64), (2, 640, 32, 32), (8, 640, 64, 64), (2, 320, 128, 128), (2, 1280, 32, 32)]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SD_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_group_norm_sd_shapes(torch, record, shape, dtype):
    """Every plan (two launches, clusters of 1..16 that fit, the plugin's) at the SD shapes."""
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"gnsd{shape}{dtype}".encode()))
    dt = tdtype(torch, dtype)
    size = shape[1] // 32 * shape[2] * shape[3]
    for variant in ("gamma+beta", "temb+bias+silu+sum", "skip+sum"):
        _, _, _, silu, with_sum = VARIANTS[variant]
        act = "silu" if silu else "none"
        inputs = make(torch, gen, shape, dt, variant)
        ry, rs = ref_of(*inputs, 32, act)
        chosen = group_norm.plan(shape[0], 32, size, dtype, skip_mode(shape, inputs[1]))
        # clusters where the H200 sweep measured them faster: FP32 with >= 256 groups
        assert chosen[2] == (has_clusters(torch) and dtype == "float32" and shape[0] * 32 >= 256), chosen
        for plan in plans(shape, 32, dtype, inputs[1]) + [None]:
            y, s = run_kernel(torch, dt, shape, inputs, 32, act, with_sum, plan=plan)
            name = f"{variant}:{tag(plan or chosen)}"
            check(record, "group_norm sd", name, dtype, shape + (str(plan or chosen),), y, ry)
            if with_sum:
                check(record, "group_norm sd", f"{name}:sum", dtype, shape + (str(plan or chosen),), s, rs)
        del inputs, ry, rs
        torch.cuda.empty_cache()


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_group_norm_cluster_is_deterministic(torch, dtype):
    """Every CTA of a cluster merges the partials in the same order: two runs are bit-identical, and
    all CTAs of a group apply the same statistics (with uniform gamma and beta, equal inputs in
    different chunks give bit-equal outputs)."""
    if not has_clusters(torch):
        pytest.skip("no thread-block clusters on this GPU")
    gen = torch.Generator(device="cuda").manual_seed(17)
    dt = tdtype(torch, dtype)
    shape, groups = (2, 64, 64, 64), 4  # groups of 65536 elements: chunks of 4096..65536 (whole channels)
    x, _, gamma, beta, _ = make(torch, gen, shape, dt, "gamma+beta")
    gamma.fill_(1.25)
    beta.fill_(0.5)
    x[:, :, 0, :] = 1.5  # the first row of every channel: in every chunk
    for plan in [p for p in plans(shape, groups, dtype) if p[2]]:
        y1, _ = run_kernel(torch, dt, shape, (x, None, gamma, beta, None), groups, "none", False, plan=plan)
        y2, _ = run_kernel(torch, dt, shape, (x, None, gamma, beta, None), groups, "none", False, plan=plan)
        assert torch.equal(y1, y2), f"{plan}: two runs differ"
        rows = y1[:, :, 0, :].reshape(2, groups, -1)
        assert (rows == rows[..., :1]).all(), f"{plan}: the CTAs of a cluster disagree on the statistics"


@pytest.mark.gpu
def test_group_norm_cluster_plan_without_clusters_runs_two_launches(torch, record):
    """Below sm_90 a forced cluster plan cannot launch: the launch falls back to the two launches."""
    if has_clusters(torch):
        pytest.skip("this GPU runs clusters")
    gen = torch.Generator(device="cuda").manual_seed(23)
    shape, groups = (2, 64, 16, 16), 8
    inputs = make(torch, gen, shape, torch.float32, "gamma+beta")
    y = alloc(torch, shape, torch.float32)
    _, ran = group_norm.kernel(inputs[0], num_groups=groups, gamma=inputs[2], beta=inputs[3], out=y,
                                plan=(2, 1024, True), return_plan=True)
    torch.cuda.synchronize()
    assert not ran[2], ran
    ry, _ = ref_of(*inputs, groups, "none")
    check(record, "group_norm", "cluster plan, no clusters", "float32", shape, y, ry)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_group_norm_forced_splits(torch, record, dtype):
    """The same result for any split of the groups into chunks: one CTA per group, the plugin's
    split, many small chunks (the partials merge in a fixed order), clusters of 3, 5 and 16 CTAs."""
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"split{dtype}".encode()))
    dt = tdtype(torch, dtype)
    shape, groups = (2, 64, 32, 32), 4  # groups of 16384 elements
    inputs = make(torch, gen, shape, dt, "temb+bias+silu+sum")
    ry, rs = ref_of(*inputs, groups, "silu")
    size = 64 // groups * 32 * 32
    forced = [(1, size, False), group_norm.plan(2, groups, size, dtype, "per_channel", device=False),
              (64, 256, False)]
    if has_clusters(torch):
        forced += [(3, 5632, True), (5, 3328, True), (16, 1024, True), (1, size, True)]
    for plan in forced + [None]:
        y, s = run_kernel(torch, dt, shape, inputs, groups, "silu", True, plan=plan)
        check(record, "group_norm", f"plan {plan}", dtype, shape, y, ry)
        check(record, "group_norm", f"plan {plan}:sum", dtype, shape, s, rs)


@pytest.mark.gpu
def test_group_norm_near_the_fp16_limit(torch, record):
    """|x| up to 60000 in FP16: the shifted FP32 sums neither overflow nor lose the variance."""
    gen = torch.Generator(device="cuda").manual_seed(11)
    shape, groups = (2, 64, 16, 16), 8
    x = alloc(torch, shape, torch.float16)
    x.copy_((torch.rand(shape, generator=gen, device="cuda") * 2 - 1) * 60000)
    gamma = randn(torch, gen, (64,), torch.float32, scale=0.5, shift=1.0)
    beta = randn(torch, gen, (64,), torch.float32, scale=0.5)
    ry, _ = ref_of(x, None, gamma, beta, None, groups, "silu")
    for plan in plans(shape, groups, "float16"):
        y, _ = run_kernel(torch, torch.float16, shape, (x, None, gamma, beta, None), groups, "silu", False, plan=plan)
        check(record, "group_norm", f"near fp16 limit:{tag(plan)}", "float16", shape, y, ry)
    # groups whose values sit at 60000 +- 64: the mean 1000x the standard deviation
    x.copy_(60000 + 32 * torch.randint(-2, 3, shape, generator=gen, device="cuda"))  # FP16 steps of 32 there
    ry, _ = ref_of(x, None, gamma, beta, None, groups, "none")
    for plan in plans(shape, groups, "float16"):
        y, _ = run_kernel(torch, torch.float16, shape, (x, None, gamma, beta, None), groups, "none", False, plan=plan)
        check(record, "group_norm", f"mean 60000, std 1:{tag(plan)}", "float16", shape, y, ry)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_group_norm_nan_stays_in_its_group(torch, dtype):
    gen = torch.Generator(device="cuda").manual_seed(5)
    dt = tdtype(torch, dtype)
    shape, groups = (2, 320, 16, 16), 32
    inputs = list(make(torch, gen, shape, dt, "gamma+beta"))
    inputs[0][1, 45, 3, 7] = float("nan")  # sample 1, group 4 (channels 40..49)
    ry, _ = ref_of(*inputs, groups, "none")
    ry = ry.reshape(2, groups, -1)
    ry[1, 4] = 0.0
    atol, rtol = {"float32": (1e-5, 0), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2)}[dtype]
    scale = max(float(np.abs(ry).max()), 1.0)
    for plan in plans(shape, groups, dtype):
        y, _ = run_kernel(torch, dt, shape, inputs, groups, "none", False, plan=plan)
        got = f64(y).reshape(2, groups, -1)
        assert np.isnan(got[1, 4]).all(), plan
        got[1, 4] = 0.0
        assert np.isfinite(got).all(), f"{plan}: NaN spread beyond its group"
        assert (np.abs(got - ry) <= atol * scale + rtol * np.abs(ry)).all(), plan


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_group_norm_in_place(torch, record, dtype):
    """y written over x (and the sum over the skip), every plan: two launches read each element
    before they write it (the group's shift K travels through the workspace); a cluster CTA has its
    whole chunk in shared memory before it stores anything."""
    gen = torch.Generator(device="cuda").manual_seed(9)
    dt = tdtype(torch, dtype)
    shape, groups = (2, 320, 16, 16), 32
    x0, skip0, gamma, beta, bias = make(torch, gen, shape, dt, "skip+sum")
    ry, rs = ref_of(x0, skip0, gamma, beta, bias, groups, "none")
    for plan in plans(shape, groups, dtype, skip0) + [None]:
        x, skip = x0.clone(), skip0.clone()
        _, ran = group_norm.kernel(x, skip, num_groups=groups, gamma=gamma, beta=beta, output_sum=True, out=x,
                                    sum_out=skip, plan=plan, return_plan=True)
        torch.cuda.synchronize()
        assert plan is None or ran == plan
        check(record, "group_norm", f"in place:{tag(ran)}", dtype, shape, x, ry)
        check(record, "group_norm", f"in place:{tag(ran)}:sum", dtype, shape, skip, rs)


@pytest.mark.gpu
def test_group_norm_bad_arguments_return_errors(torch):
    x = torch.randn(2, 8, 4, 4, device="cuda")
    g = torch.ones(8, device="cuda")
    ws = torch.empty(group_norm.workspace_size(2, 4, "channels_first"), dtype=torch.uint8, device="cuda")
    p = x.data_ptr()
    raw = lambda **kw: group_norm.raw_kernel(**{**dict(  # noqa: E731
        dtype="float32", x=p, skip=0, skip_mode="none", bias=0, gamma=g.data_ptr(), beta=0, y=p, sum_out=0,
        workspace=ws.data_ptr(), workspace_size=ws.numel(), n=2, channels=8, spatial=16, groups=4, epsilon=1e-5,
        activation="none"), **kw})
    raw()  # the baseline launches
    for bad in (dict(groups=3), dict(groups=0), dict(workspace_size=ws.numel() - 1), dict(workspace=0),
                dict(skip_mode="full"), dict(gamma=0), dict(epsilon=-1.0), dict(n=-1)):
        with pytest.raises(kernels.KernelError, match="CUDA error"):
            raw(**bad)
    assert kernels.load().trtp_group_norm(0, p, None, 0, None, g.data_ptr(), None, p, None, ws.data_ptr(), ws.numel(),
                                          2, 8, 16, 4, 1e-5, 7, 0, 0, 0, None, None) != 0  # unknown activation
    raw(n=0)  # nothing to do
    two = group_norm.plan(2, 4, 32, device=False)
    # plans that are no split of these groups: the two launches run
    for bad in ((3, 100), (3, 100, True), (32, 1, True), (17, 256, True), (2, 256, True), (1, 1 << 40, True)):
        assert raw(plan=bad) == two, bad
    # a cluster of 17 CTAs (a split of a group of 17 x 256, but beyond 16): the two launches run
    x17 = torch.randn(1, 17, 256, device="cuda")
    g17 = torch.ones(17, device="cuda")
    ran = group_norm.raw_kernel("float32", x17.data_ptr(), 0, "none", 0, g17.data_ptr(), 0, x17.data_ptr(), 0,
                                 ws.data_ptr(), ws.numel(), 1, 17, 256, 1, 1e-5, "none", plan=(17, 256, True))
    assert ran == group_norm.plan(1, 1, 17 * 256, device=False)
    torch.cuda.synchronize()


# --- the plugin -----------------------------------------------------------------------------

TRT_TYPE = {"float32": FLOAT, "float16": HALF, "bfloat16": BF16}
PLUGIN_CASES = [((2, 320, 64, 64), 32, None), ((2, 64, 7, 7), 1, "channel"), ((1, 32, 1, 1), 32, "full"),
                ((3, 48, 5, 3), 16, "channel")]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", list(TRT_TYPE))
@pytest.mark.parametrize("shape,groups,skip_kind", PLUGIN_CASES, ids=str)
def test_group_norm_plugin_matches_bare_kernel(h, torch, record, dtype, shape, groups, skip_kind):
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"plugin{shape}{dtype}".encode()))
    dt = tdtype(torch, dtype)
    c = shape[1]
    x = randn(torch, gen, shape, dt, scale=2.0, shift=1.0)
    skip = None if skip_kind is None else randn(
        torch, gen, shape if skip_kind == "full" else (shape[0], c) + (1,) * (len(shape) - 2), dt)
    rng = np.random.default_rng(3)
    gamma, beta, bias = (rng.standard_normal(c).astype(np.float32) for _ in range(3))
    p = h.create_from("GroupNorm", num_groups=groups, gamma=gamma, beta=beta, bias=bias, activation="silu",
                      epsilon=1e-5, output_sum=1)
    inputs = [x] if skip is None else [x, skip]
    outs = [torch.full_like(x, float("nan")) for _ in range(2)]
    types = [TRT_TYPE[dtype]] * (len(inputs) + 2)
    shapes = [tuple(t.shape) for t in inputs] + [shape, shape]
    build = [(-1,) + s[1:] for s in shapes]  # a dynamic batch at build time
    assert p.configure(types, build, len(inputs)) == 0
    assert p.initialize() == 0
    assert p.shape_change(types, shapes, len(inputs)) == 0
    size = p.workspace(types, shapes, len(inputs))
    assert size >= group_norm.workspace_size(shape[0], groups, "channels_first") > 0
    ws = torch.empty(size, dtype=torch.uint8, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    rc = p.enqueue(types, shapes, [t.data_ptr() for t in inputs], [t.data_ptr() for t in outs], stream,
                   workspace=ws.data_ptr())
    torch.cuda.synchronize()
    assert rc == 0
    cu = lambda a: torch.from_numpy(a).cuda()  # noqa: E731
    by, bs = group_norm.kernel(x, skip, num_groups=groups, gamma=cu(gamma), beta=cu(beta), bias=cu(bias),
                                activation="silu", epsilon=1e-5, output_sum=True)
    torch.cuda.synchronize()
    assert torch.equal(outs[0], by) and torch.equal(outs[1], bs), "plugin enqueue and bare kernel differ"
    ry, rs = ref_of(x, skip, cu(gamma), cu(beta), cu(bias), groups, "silu")
    check(record, "plugin:GroupNorm", f"trt{h.major}-v{h.api}:{skip_kind or 'x'}", dtype, shape, outs[0], ry)
    check(record, "plugin:GroupNorm", f"trt{h.major}-v{h.api}:{skip_kind or 'x'}:sum", dtype, shape, outs[1], rs)
    # no workspace: an error with a reason, never a launch
    assert p.enqueue(types, shapes, [t.data_ptr() for t in inputs], [t.data_ptr() for t in outs], stream) != 0
