"""GroupNorm's resident design (issue 30) on the GPU: channels-last tensors (TensorRT's HWC8 / HWC16 /
HWC, DHWC8 / DHWC: the channels padded to a stride, the pad written as zero) and, forced, channels-first
ones, against trtplugins.ops.group_norm.reference over a shape grid, every fused variant and each plan
(the plugin's: one cooperative launch, the range held on chip where it fits; half the range on chip;
two launches); in place, deterministic, captured in a CUDA graph, NaN confined, near the FP16 limit,
tensors past what the chip holds; and the plugin's enqueue with channels-last formats (both majors,
both interfaces) bit-identical to the bare kernel.

Tolerances as tests/gpu/test_kernels.py (check()). Statistics: FP32 sums of s - K (K the group's first
value) per CTA, merged in a fixed order.
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from trtplugins import kernels
from trtplugins.ops import group_norm

from .test_group_norm_gpu import VARIANTS, ref_of
from .test_kernels import DTYPES, alloc, check, f64, tdtype

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from plugin_harness import BF16, DHWC, DHWC8, FLOAT, HALF, HWC, HWC8, HWC16  # noqa: E402

# (logical shape, groups, channel stride): whole packs, padded channels (HWC8 / HWC16 / odd), one
# group, a group per channel, rank 5, SD shapes, one pixel, a pixel row wider than a warp
CL_SHAPES = [((2, 320, 16, 16), 32, 320), ((2, 40, 9, 7), 8, 40), ((2, 20, 5, 5), 4, 24), ((1, 3, 4, 4), 3, 8),
             ((2, 40, 3, 5), 8, 48), ((2, 64, 7, 7), 1, 64), ((2, 64, 7, 7), 64, 64), ((1, 8, 3, 4, 5), 2, 8),
             ((2, 320, 64, 64), 32, 320), ((2, 1280, 8, 8), 32, 1280), ((1, 32, 1, 1), 32, 32), ((3, 12, 5, 3), 3, 12),
             ((2, 6, 5, 5), 3, 6)]


def cl_buffer(torch, shape, dt, cs, offset=0):
    """A NaN-poisoned [N, spatial..., cs] buffer and its logical N, C, spatial... view."""
    buf = alloc(torch, (shape[0],) + tuple(shape[2:]) + (cs,), dt, offset)
    return buf, buf[..., : shape[1]].permute(0, len(shape) - 1, *range(1, len(shape) - 1))


def make_cl(torch, gen, shape, dt, variant, cs, offset=0):
    """x, skip, gamma, beta, bias as test_group_norm_gpu.make, x and skip stored channels-last."""
    has_bias, has_beta, skip_kind, _, _ = VARIANTS[variant]
    c = shape[1]

    def filled(s, scale=1.0, shift=0.0):
        buf, view = cl_buffer(torch, s, dt, cs, offset)
        view.copy_(torch.randn(s, generator=gen, device="cuda") * scale + shift)
        return buf, view

    xb, x = filled(shape, 2.0, 3.0)
    skip = None
    if skip_kind == "full":
        skip = filled(shape)[1]
    elif skip_kind == "channel":
        skip = filled((shape[0], c) + (1,) * (len(shape) - 2))[1]
    w = lambda scale, shift=0.0: torch.randn(c, generator=gen, device="cuda") * scale + shift  # noqa: E731
    return xb, x, skip, w(0.5, 1.0), w(0.5) if has_beta else None, w(0.5) if has_bias else None


def resident_plans(shape, groups, dtype, cs, skip_kind, layout="channels_last"):
    """The plugin's plan on this GPU, half of each range on chip (fused plans), the two launches,
    (16-bit channels-last) the narrow fused plan of two CTAs per SM, whole segments per CTA,
    (channels-last) the fused plan cut into channel windows and each group (window) one cluster."""
    n, c = shape[:2]
    spatial = int(np.prod(shape[2:]))
    mode = {None: "none", "full": "full", "channel": "per_channel"}[skip_kind]
    args = (n, c, spatial, groups, dtype, mode, layout, cs if layout == "channels_last" else 0)
    conf = group_norm.resident_plan(*args)
    plans = [conf, group_norm.resident_plan(*args, configured=False)]
    if conf[3] and conf[1] > 1:
        align = 1 if layout == "channels_last" else 16 // tdtype_size(dtype)
        plans.append((conf[0], conf[1], min(conf[2], conf[1] // 2 // align * align), True, False, 0))
    two = group_norm.resident_plan(*args, ctas_per_sm=2)
    if two[3] and two[4]:  # narrow kernels are built for two CTAs per SM; the others may not fit two
        plans.append(two)
    whole = group_norm.resident_plan(*args, whole_segments=True)  # a CTA barrier, no grid-wide one
    if whole[0]:
        plans.append(whole)
    if layout == "channels_last":  # a CTA per range and window of channels
        windows = group_norm.resident_plan(*args, windows=0)
        if windows[3]:
            plans.append(windows)
    # each group (a sample's window of groups) one thread-block cluster of 2-8 CTAs (a cluster barrier)
    plans += [p for k in (2, 3, 4, 8) if (p := group_norm.resident_plan(*args, cluster=k))[0]]
    return list(dict.fromkeys(plans))


def tdtype_size(dtype):
    return 4 if dtype == "float32" else 2


def run(torch, x, skip, gamma, beta, bias, groups, act, with_sum, plan=None, out=None, layout=None):
    """(y, s) through the resident design, y and s laid out as x (NaN-poisoned); plan forced if given;
    layout as the binding's (channels-last views of shapes whose spatial dims are all 1 are contiguous)."""
    y = group_norm.empty_like(x) if out is None else out
    if out is None:
        y.fill_(float("nan"))
    s = group_norm.empty_like(x).fill_(float("nan")) if with_sum else None
    _, ran = group_norm.kernel(x, skip, num_groups=groups, gamma=gamma, beta=beta, bias=bias, activation=act,
                               epsilon=1e-5, output_sum=with_sum, out=y, sum_out=s, resident=plan or True,
                               layout=layout, return_plan=True)
    torch.cuda.synchronize()
    if plan is not None:
        assert ran == tuple(plan), f"forced {plan}, ran {ran}"
    return y, s, ran


def pad_of(view, shape):
    """The pad channels of a channels-last view's buffer."""
    base = view.permute(0, *range(2, len(shape)), 1)  # [N, spatial..., C] view into the buffer
    full = base.as_strided(base.shape[:-1] + (view.stride(-1),), base.stride())
    return full[..., shape[1]:]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("variant", VARIANTS)
def test_channels_last_kernel(torch, record, variant, dtype):
    _, _, _, silu, with_sum = VARIANTS[variant]
    act = "silu" if silu else "none"
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"cl{variant}{dtype}".encode()))
    dt = tdtype(torch, dtype)
    cases = [(s, g, cs, 0) for s, g, cs in CL_SHAPES] + [((2, 40, 6, 6), 8, 40, 1)]  # offset 1: the scalar path
    for shape, groups, cs, offset in cases:
        if not group_norm.channels_last_ok(dtype, shape[1], cs):
            continue
        _, x, skip, gamma, beta, bias = make_cl(torch, gen, shape, dt, variant, cs, offset)
        ry, rs = ref_of(x, skip, gamma, beta, bias, groups, act)
        for plan in resident_plans(shape, groups, dtype, cs, VARIANTS[variant][2]) + [None]:
            y, s, ran = run(torch, x, skip, gamma, beta, bias, groups, act, with_sum, plan if offset == 0 else None,
                            layout="channels_last")
            at = shape + (f"G{groups}", f"cs{cs}", str(ran)) + ((f"+{offset}",) if offset else ())
            check(record, "group_norm cl", variant, dtype, at, y, ry)
            assert bool((pad_of(y, shape) == 0).all()), f"{at}: y's pad is not zero"
            if with_sum:
                check(record, "group_norm cl", f"{variant}:sum", dtype, at, s, rs)
                assert bool((pad_of(s, shape) == 0).all()), f"{at}: s's pad is not zero"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_channels_first_resident(torch, record, dtype):
    """The resident design forced on channels-first tensors (the plugin picks the split one there)."""
    from .test_group_norm_gpu import SHAPES, make

    dt = tdtype(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"cfres{dtype}".encode()))
    for variant in ("gamma+beta", "temb+bias+silu+sum", "skip+sum"):
        _, _, skip_kind, silu, with_sum = VARIANTS[variant]
        act = "silu" if silu else "none"
        for shape, groups in [s for s in SHAPES if 0 not in s[0]] + [((8, 640, 32, 32), 32)]:
            x, skip, gamma, beta, bias = make(torch, gen, shape, dt, variant)
            ry, rs = ref_of(x, skip, gamma, beta, bias, groups, act)
            for plan in resident_plans(shape, groups, dtype, 0, skip_kind, "channels_first"):
                y, s, ran = run(torch, x, skip, gamma, beta, bias, groups, act, with_sum, plan)
                check(record, "group_norm resident", variant, dtype, shape + (f"G{groups}", str(ran)), y, ry)
                if with_sum:
                    check(record, "group_norm resident", f"{variant}:sum", dtype, shape + (str(ran),), s, rs)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_channels_first_small_groups_run_whole_segments(torch, record, dtype):
    """Channels-first groups of up to 32 KB on 1-8 samples: the plugin's launch is a CTA per whole
    group (the whole-segment plan), no skip; larger groups and more samples keep the other designs."""
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"cfwhole{dtype}".encode()))
    dt = tdtype(torch, dtype)
    for shape in [(2, 1280, 8, 8), (1, 1280, 16, 16), (2, 1280, 16, 16), (2, 640, 32, 32), (8, 1280, 8, 8),
                  (16, 1280, 8, 8)]:
        n, c, h, w = shape
        group_bytes = c // 32 * h * w * tdtype_size(dtype)
        x = (torch.randn(shape, generator=gen, device="cuda") * 2 + 3).to(dt)
        gamma, beta = (torch.randn(c, generator=gen, device="cuda") for _ in range(2))
        for act in ("none", "silu"):
            ry, _ = ref_of(x, None, gamma, beta, None, 32, act)
            y, ran = group_norm.kernel(x, num_groups=32, gamma=gamma, beta=beta, activation=act, epsilon=1e-5,
                                       return_plan=True)
            torch.cuda.synchronize()
            whole = group_norm.resident_plan(n, c, h * w, 32, dtype, whole_segments=True)
            assert (tuple(ran) == whole) == (group_bytes <= 32 * 1024 and n <= 8), (shape, act, ran, whole)
            check(record, "group_norm cf whole", act, dtype, shape + (str(ran),), y, ry)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_channels_last_in_place_deterministic_and_captured(torch, record, dtype):
    """y over x and s over a full skip, every plan; two runs bit-identical; a fused launch captured in a
    CUDA graph replays to the same bits."""
    gen = torch.Generator(device="cuda").manual_seed(9)
    dt = tdtype(torch, dtype)
    shape, groups, cs = (2, 320, 16, 16), 32, 320
    _, x0, skip0, gamma, beta, bias = make_cl(torch, gen, shape, dt, "skip+sum", cs)
    ry, rs = ref_of(x0, skip0, gamma, beta, bias, groups, "none")
    for plan in resident_plans(shape, groups, dtype, cs, "full"):
        y1, s1, _ = run(torch, x0, skip0, gamma, beta, bias, groups, "none", True, plan)
        y2, s2, _ = run(torch, x0, skip0, gamma, beta, bias, groups, "none", True, plan)
        assert torch.equal(y1, y2) and torch.equal(s1, s2), f"{plan}: two runs differ"
        xb, x = cl_buffer(torch, shape, dt, cs)
        kb, skip = cl_buffer(torch, shape, dt, cs)
        x.copy_(x0)
        skip.copy_(skip0)
        _, ran = group_norm.kernel(x, skip, num_groups=groups, gamma=gamma, beta=beta, bias=bias, output_sum=True,
                                   out=x, sum_out=skip, resident=plan, return_plan=True)
        torch.cuda.synchronize()
        assert torch.equal(x, y1) and torch.equal(skip, s1), f"{ran}: in place differs"
        check(record, "group_norm cl", "in place", dtype, shape + (str(ran),), x, ry)
        check(record, "group_norm cl", "in place:sum", dtype, shape + (str(ran),), skip, rs)
    y, _, ran = run(torch, x0, None, gamma, beta, None, groups, "silu", False)
    graph, out = torch.cuda.CUDAGraph(), group_norm.empty_like(x0).fill_(float("nan"))
    with torch.cuda.graph(graph):
        group_norm.kernel(x0, num_groups=groups, gamma=gamma, beta=beta, activation="silu", out=out, resident=True)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, y), f"{ran}: the graph's replay differs"


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["channels_last", "channels_first"])
def test_resident_nan_stays_in_its_group_and_fp16_limit(torch, record, layout):
    gen = torch.Generator(device="cuda").manual_seed(5)
    shape, groups = (2, 320, 16, 16), 32
    cs = 320 if layout == "channels_last" else 0

    def tensor(values):
        if not cs:
            return values.contiguous()
        _, view = cl_buffer(torch, shape, values.dtype, cs)
        return view.copy_(values)

    gamma = torch.randn(320, generator=gen, device="cuda") * 0.5 + 1
    beta = torch.randn(320, generator=gen, device="cuda") * 0.5
    x = tensor(torch.randn(shape, generator=gen, device="cuda").half())
    x[1, 45, 3, 7] = float("nan")  # sample 1, group 4 (channels 40..49)
    for plan in resident_plans(shape, groups, "float16", cs, None, layout):
        y, _, _ = run(torch, x, None, gamma, beta, None, groups, "none", False, plan)
        got = f64(y).reshape(2, groups, -1)
        assert np.isnan(got[1, 4]).all(), plan
        got[1, 4] = 0.0
        assert np.isfinite(got).all(), f"{plan}: NaN spread beyond its group"
    x = tensor(((torch.rand(shape, generator=gen, device="cuda") * 2 - 1) * 60000).half())
    ry, _ = ref_of(x, None, gamma, beta, None, groups, "silu")
    for plan in resident_plans(shape, groups, "float16", cs, None, layout):
        y, _, ran = run(torch, x, None, gamma, beta, None, groups, "silu", False, plan)
        check(record, "group_norm resident", f"{layout} near fp16 limit", "float16", shape + (str(ran),), y, ry)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["channels_last", "channels_first"])
def test_resident_past_on_chip_capacity(torch, record, layout):
    """A tensor larger than the GPU's shared memory: part of each range staged, the rest read twice."""
    gen = torch.Generator(device="cuda").manual_seed(13)
    shape, groups = (1, 512, 256, 256), 32
    cs = 512 if layout == "channels_last" else 0
    for variant in ("gamma+beta", "temb+bias+silu+sum"):
        _, _, skip_kind, silu, with_sum = VARIANTS[variant]
        if cs:
            _, x, skip, gamma, beta, bias = make_cl(torch, gen, shape, torch.float16, variant, cs)
        else:
            from .test_group_norm_gpu import make

            x, skip, gamma, beta, bias = make(torch, gen, shape, torch.float16, variant)
        ry, rs = ref_of(x, skip, gamma, beta, bias, groups, "silu" if silu else "none")
        for plan in resident_plans(shape, groups, "float16", cs, skip_kind, layout):
            y, s, ran = run(torch, x, skip, gamma, beta, bias, groups, "silu" if silu else "none", with_sum, plan)
            check(record, "group_norm resident", f"{layout} {variant} past capacity", "float16", shape + (str(ran),), y,
                  ry)
            del y, s
        del x, skip, ry, rs
        torch.cuda.empty_cache()


@pytest.mark.gpu
def test_resident_bad_arguments_return_errors(torch):
    x = torch.randn(2, 8, 4, 4, device="cuda")
    g = torch.ones(8, device="cuda")
    ws = torch.empty(group_norm.workspace_size(2, 4), dtype=torch.uint8, device="cuda")
    p = x.data_ptr()
    raw = lambda **kw: group_norm.raw_resident(**{**dict(  # noqa: E731
        dtype="float32", layout="channels_last", stride=8, x=p, skip=0, skip_mode="none", bias=0, gamma=g.data_ptr(),
        beta=0, y=p, sum_out=0, workspace=ws.data_ptr(), workspace_size=ws.numel(), n=2, channels=8, spatial=16,
        groups=4, epsilon=1e-5, activation="none"), **kw})
    raw()  # the baseline launches
    for bad in (dict(stride=7), dict(groups=3), dict(workspace_size=ws.numel() - 1), dict(skip_mode="full"),
                dict(gamma=0), dict(epsilon=-1.0), dict(channels=8, stride=1 << 20)):
        with pytest.raises(kernels.KernelError, match="CUDA error"):
            raw(**bad)
    # plans that are no split of this shape: its two launches run
    two = group_norm.resident_plan(2, 8, 16, 4, "float32", "none", "channels_last", 8, configured=False)
    for bad in ((3, 5, 0, True), (1, 32, 33, True), (0, 0, 0, False), (2, 16, 4, False)):
        assert raw(plan=bad) == two, bad
    # channel windows: 2 of 4 channels run, on whole samples or on fused ranges of part of one (the grid
    # barrier joins them); 3 (not whole groups), 4 (2 channels: not a float4), unfused, or a padded channel
    # stride do not
    windows = (4, 16, 16, True, False, 0)
    for good in (windows, (8, 8, 8, True, False, 0)):
        assert raw(plan=good) == good
    for bad in ((6, 16, 16, True), (8, 16, 16, True), (4, 16, 0, False)):
        assert raw(plan=bad) == two, bad
    wide = torch.randn(2, 4, 4, 12, device="cuda")  # channel stride 12: 4 channels of pad
    padded = dict(stride=12, x=wide.data_ptr(), y=wide.data_ptr())
    assert raw(plan=windows, **padded) == group_norm.resident_plan(2, 8, 16, 4, "float32", "none", "channels_last",
                                                                   12, configured=False)
    torch.cuda.synchronize()


# --- the plugin -----------------------------------------------------------------------------

TRT_TYPE = {"float32": FLOAT, "float16": HALF, "bfloat16": BF16}
# (TensorRT format, pad, dtypes, shape, groups, skip)
PLUGIN_CASES = [(HWC8, 8, ("float16", "bfloat16"), (2, 320, 16, 16), 32, None),
                (HWC8, 8, ("float16", "bfloat16"), (2, 20, 5, 5), 4, "channel"),
                (HWC16, 16, ("float16",), (2, 40, 6, 6), 8, "full"),
                (HWC, 1, ("float32",), (2, 12, 5, 3), 3, "channel"),
                (DHWC8, 8, ("float16", "bfloat16"), (1, 24, 3, 4, 5), 6, None),
                (DHWC, 1, ("float32",), (1, 8, 3, 4, 5), 2, "full")]


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,pad,dtypes,shape,groups,skip_kind", PLUGIN_CASES, ids=str)
def test_group_norm_plugin_channels_last_matches_bare_kernel(h, torch, record, fmt, pad, dtypes, shape, groups,
                                                             skip_kind):
    """enqueue with TensorRT's channels-last descriptors (the channel stride from the format) ==
    the bare kernel on the same buffers, bit for bit, and within tolerance of the reference."""
    c = shape[1]
    cs = (c + pad - 1) // pad * pad
    for dtype in dtypes:
        gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"plugincl{shape}{dtype}{fmt}".encode()))
        dt = tdtype(torch, dtype)
        variant = {None: "bias+silu", "full": "skip+sum", "channel": "temb+bias+silu+sum"}[skip_kind]
        _, x, skip, _, _, _ = make_cl(torch, gen, shape, dt, variant, cs)
        rng = np.random.default_rng(3)
        gamma, beta, bias = (rng.standard_normal(c).astype(np.float32) for _ in range(3))
        p = h.create_from("GroupNorm", num_groups=groups, gamma=gamma, beta=beta, bias=bias, activation="silu",
                          epsilon=1e-5, output_sum=1)
        inputs = [x] if skip is None else [x, skip]
        outs = [group_norm.empty_like(x).fill_(float("nan")) for _ in range(2)]
        types = [TRT_TYPE[dtype]] * (len(inputs) + 2)
        shapes = [tuple(t.shape) for t in inputs] + [shape, shape]
        p.set_formats([fmt] * len(types))
        assert p.supports(0, types, len(inputs), formats=[fmt] * len(types), shapes=shapes)
        assert p.configure(types, [(-1,) + s[1:] for s in shapes], len(inputs)) == 0
        assert p.initialize() == 0
        assert p.shape_change(types, shapes, len(inputs)) == 0
        ws = torch.empty(p.workspace(types, shapes, len(inputs)), dtype=torch.uint8, device="cuda")
        stream = torch.cuda.current_stream().cuda_stream
        assert p.enqueue(types, shapes, [t.data_ptr() for t in inputs], [t.data_ptr() for t in outs], stream,
                         workspace=ws.data_ptr()) == 0
        torch.cuda.synchronize()
        cu = lambda a: torch.from_numpy(a).cuda()  # noqa: E731
        by, bs = group_norm.kernel(x, skip, num_groups=groups, gamma=cu(gamma), beta=cu(beta), bias=cu(bias),
                                   activation="silu", epsilon=1e-5, output_sum=True, layout="channels_last")
        torch.cuda.synchronize()
        assert torch.equal(outs[0], by) and torch.equal(outs[1], bs), f"{dtype}: plugin enqueue and bare kernel differ"
        ry, rs = ref_of(x, skip, cu(gamma), cu(beta), cu(bias), groups, "silu")
        name = f"trt{h.major}-v{h.api}:fmt{fmt}:{skip_kind or 'x'}"
        check(record, "plugin:GroupNorm cl", name, dtype, shape, outs[0], ry)
        check(record, "plugin:GroupNorm cl", f"{name}:sum", dtype, shape, outs[1], rs)
        for t in outs:
            assert bool((pad_of(t, shape) == 0).all()), f"{dtype}: the pad is not zero"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_chosen_entry_is_the_plugins_design(torch, dtype):
    """trtp_group_norm_chosen (what trtplugins.torch calls, with choose()'s answer kept per shape) runs the
    design the plugin picks on this GPU: choose() is groupNormResidentFirst's fused resident plan, else the
    split plan; its outputs bit-identical to kernel() forced to that plan, channels-first and channels-last."""
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"chosen{dtype}".encode()))
    dt = tdtype(torch, dtype)
    # whole groups per CTA, the fused resident plan, the split one (8 samples, a skip, 2.6 MB)
    for shape, variant in [((2, 1280, 8, 8), "gamma+beta"), ((2, 320, 64, 64), "bias+silu"),
                           ((8, 320, 16, 16), "gamma+beta"), ((2, 320, 32, 32), "skip+sum"),
                           ((1, 320, 64, 64), "gamma+beta")]:
        n, c = shape[:2]
        spatial = shape[2] * shape[3]
        has_bias, _, skip_kind, silu, with_sum = VARIANTS[variant]
        act, mode = ("silu" if silu else "none"), ("full" if skip_kind else "none")
        x = (torch.randn(shape, generator=gen, device="cuda") * 2 + 3).to(dt)
        skip = torch.randn(shape, generator=gen, device="cuda").to(dt) if skip_kind else None
        gamma, beta = (torch.randn(c, generator=gen, device="cuda") for _ in range(2))
        bias = torch.randn(c, generator=gen, device="cuda") if has_bias else None
        resident, split = group_norm.choose(n, c, spatial, 32, dtype, mode, act)
        rp = group_norm.resident_plan(n, c, spatial, 32, dtype, mode)
        first = group_norm.resident_first(n, c, spatial, 32, dtype, mode, act) and rp[3] and (
            rp[5] or group_norm.resident_first(n, c, spatial, 32, dtype, mode, act, clusters=False))
        assert resident == (rp if first else None), (shape, variant, resident, rp)
        assert first or split == group_norm.plan(n, 32, c // 32 * spatial, dtype, mode), (shape, split)
        forced = dict(resident=resident) if resident else dict(plan=split, resident=False)
        want = group_norm.kernel(x, skip, num_groups=32, gamma=gamma, beta=beta, bias=bias, activation=act,
                                 epsilon=1e-5, output_sum=with_sum, **forced)
        want = want if with_sum else (want, None)
        choice = group_norm._choice(x.device.index, dtype, n, c, spatial, 32, mode, act)
        launch = group_norm.chosen_launcher(dtype, mode, n, c, spatial, 32, 1e-5, act, choice)
        y, s = torch.empty_like(x), torch.empty_like(x) if with_sum else None
        size = group_norm.workspace_size(n, 32)
        ws = torch.empty(size, dtype=torch.uint8, device="cuda")
        code = launch(x.data_ptr(), 0 if skip is None else skip.data_ptr(), 0 if bias is None else bias.data_ptr(),
                      gamma.data_ptr(), beta.data_ptr(), y.data_ptr(), 0 if s is None else s.data_ptr(),
                      ws.data_ptr(), size, kernels.stream_of(x))
        torch.cuda.synchronize()
        assert code == 0 and torch.equal(y, want[0]), (shape, variant, code)
        assert s is None or torch.equal(s, want[1]), (shape, variant)
    # channels-last: the resident design, the plan the plugin configures
    resident, _ = group_norm.choose(2, 320, 4096, 32, dtype, layout="channels_last", stride=320)
    assert resident == group_norm.resident_plan(2, 320, 4096, 32, dtype, "none", "channels_last")


@pytest.mark.gpu
def test_floors_copy_x_exactly(torch):
    """The benchmark's one-launch floors (group_norm.floor): x copied to y bit for bit through each barrier at SD
    batch 2's splits (2 CTAs a group, one a group, clusters of 2 where the GPU runs them, the grid's one CTA per
    SM); a share past a CTA's shared memory, and more cooperative CTAs than fit, are refused, not run."""
    x = torch.randn(2, 320, 64, 64, device="cuda").half()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    cases = [("none", 128, 0), ("cta", 64, 0), ("grid", sms, 0)]
    if group_norm.device()["max_cluster"] >= 2:
        cases.append(("cluster", 128, 2))
    for barrier, ctas, cluster in cases:
        y = torch.zeros_like(x)
        group_norm.floor(x, y, barrier, ctas, cluster)
        torch.cuda.synchronize()
        assert torch.equal(y.view(torch.int16), x.view(torch.int16)), barrier
    big = torch.zeros(1 << 24, device="cuda", dtype=torch.half)  # 32 MB on one CTA
    with pytest.raises(kernels.KernelError, match="CUDA error"):
        group_norm.floor(big, big.clone(), "none", 1)
    with pytest.raises(kernels.KernelError, match="CUDA error"):
        group_norm.floor(x, torch.zeros_like(x), "grid", 64 * sms)  # 64 CTAs of 512 threads per SM cannot fit
