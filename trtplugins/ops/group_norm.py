"""GroupNorm: s = x (+ bias[c]) (+ skip); y = act(GroupNorm(s) * gamma + beta) over x = N, C,
spatial... (rank >= 3); outputs y and, with output_sum, s.

Its numpy reference and kernel binding (its ONNX patterns: group_norm_patterns.py). The subgraphs
replaced (each as the exporters write torch.nn.GroupNorm), where s = x, or x -> Add(bias [C, 1, ...])
and/or Add(skip) -> s with skip like x or [N, C, 1, ...] (a UNet's time embedding), and a SiLU after
folded in (Sigmoid + Mul: `activation` silu); s is the second output where others read it:

    group_norm_instance  s -> Reshape[N, G, -1] -> InstanceNormalization(ones, zeros)
                           -> Reshape back -> Mul(gamma [C,1,1]) -> Add(beta) -> y
    group_norm           s -> Reshape[N, G, -1] -> (the layer_norm chain, last axis)
                           -> Reshape back -> Mul(gamma) -> Add(beta) -> y
    group_norm_op        s -> GroupNormalization(num_groups) -> y     (opset 21; 18 converted)

Replaced by default even as one op: TensorRT's GroupNormalization is wrong at num_groups = 1 on
10.16 (NVIDIA/TensorRT#4756) and its plugin needs cuDNN.
"""

from __future__ import annotations

import ctypes
import functools
import math
from typing import Any, Sequence

import numpy as np

from .. import kernels
from ..reference import activation, check_vec, f64
from . import GROUP_NORM, spec
from .group_norm_patterns import PATTERNS  # noqa: F401 (the registry reads each op module's PATTERNS)

#: the default epsilon (the declaration's, from schema.json)
EPSILON = spec(GROUP_NORM).field("epsilon").default

#: fields and input shapes of one instance (tests, docs)
EXAMPLE = ({"num_groups": 4, "gamma": np.linspace(0.5, 1.5, 32, dtype=np.float32),
            "bias": np.linspace(-1, 1, 32, dtype=np.float32), "activation": "silu"}, [(2, 32, 6, 6), (2, 32, 6, 6)])

# --- reference ------------------------------------------------------------------------------


def skip_fits(shape, skip_shape) -> bool:
    """Whether the op takes a skip of skip_shape beside x of shape (N, C, spatial...): x's shape, or
    [N, C, 1, ...] (per channel)."""
    shape, skip_shape = tuple(shape), tuple(skip_shape)
    return skip_shape in (shape, shape[:2] + (1,) * (len(shape) - 2))


def reference(
    x: np.ndarray,
    skip: np.ndarray | None = None,
    *,
    num_groups: int,
    gamma: np.ndarray,
    beta: np.ndarray | None = None,
    bias: np.ndarray | None = None,
    activation_name: str = "none",
    epsilon: float = EPSILON,
    output_sum: bool = False,
):
    """s = x (+ bias[c]) (+ skip); y = act((s - mean_g) / sqrt(var_g + eps) * gamma[c] + beta[c]).

    x is N, C, spatial... (rank >= 3); a group is C / num_groups channels of one sample. skip has
    x's shape or [N, C, 1, ...] (one value per sample and channel). Returns y, or (y, s) with output_sum.
    """
    x = np.asarray(x)
    if x.ndim < 3:
        raise ValueError(f"x has shape {x.shape}; expected N, C, spatial... (rank >= 3)")
    n, c = x.shape[:2]
    if num_groups < 1 or c % num_groups:
        raise ValueError(f"{c} channels are not divisible by num_groups {num_groups}")
    for name, v in (("gamma", gamma), ("beta", beta), ("bias", bias)):
        check_vec(name, None if v is None else np.asarray(v), c)
    chan = (1, c) + (1,) * (x.ndim - 2)
    s = x.astype(np.float64)
    if bias is not None:
        s = s + f64(bias).reshape(chan)
    if skip is not None:
        skip = np.asarray(skip)
        if not skip_fits(x.shape, skip.shape):
            raise ValueError(f"skip shape {skip.shape} is neither x's {x.shape} nor [N, C, 1, ...]")
        s = s + f64(skip)
    g = s.reshape(n, num_groups, c // num_groups * int(np.prod(x.shape[2:])))
    centered = g - g.mean(axis=-1, keepdims=True)
    y = (centered / np.sqrt((centered**2).mean(axis=-1, keepdims=True) + epsilon)).reshape(x.shape)
    y = y * f64(gamma).reshape(chan)
    if beta is not None:
        y = y + f64(beta).reshape(chan)
    if activation_name == "silu":
        y = activation("silu", y)
    elif activation_name != "none":
        raise ValueError(f"unknown GroupNorm activation {activation_name!r}; expected none or silu")
    y = y.astype(x.dtype)
    return (y, s.astype(x.dtype)) if output_sum else y


def node_reference(inputs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    out = reference(inputs[0], inputs[1] if len(inputs) > 1 else None, num_groups=int(attrs["num_groups"]),
                    gamma=attrs["gamma"], beta=attrs.get("beta"), bias=attrs.get("bias"),
                    activation_name=attrs.get("activation", "none"), epsilon=float(attrs.get("epsilon", EPSILON)),
                    output_sum=bool(int(attrs.get("output_sum", 0))))
    return list(out) if isinstance(out, tuple) else [out]


# --- kernel binding -------------------------------------------------------------------------

ACTIVATION_IDS = spec(GROUP_NORM).enum_ids("activation")


def skip_mode_id(mode: str | int) -> int:
    """How a skip input is added: "none", "full" (like x) or "per_channel" ([N, C, 1, ...])."""
    return kernels.lookup(kernels.enums()["group_norm_skip"], mode, "skip mode")


def launcher(dtype, skip_mode, n: int, channels: int, spatial: int, groups: int, epsilon: float, activation,
             plan: tuple = (0, 0, False)):
    """raw_kernel with all but the pointers resolved once (a caller launching one shape many times):
    launch(x, skip, bias, gamma, beta, y, sum_out, workspace, workspace_size, stream, ran=None) -> the
    C entry's code (ran: a c_longlong[3] for the plan that ran)."""
    chunks, chunk_len, cluster = _plan3(plan)
    fn, dt, mode = kernels.load().trtp_group_norm, kernels.dtype_id(dtype), skip_mode_id(skip_mode)
    act = kernels.lookup(ACTIVATION_IDS, activation, "activation")

    def launch(x, skip, bias, gamma, beta, y, sum_out, workspace, workspace_size, stream, ran=None):
        return fn(dt, x, skip or None, mode, bias or None, gamma, beta or None, y, sum_out or None, workspace or None,
                  workspace_size, n, channels, spatial, groups, epsilon, act, chunks, chunk_len, cluster, ran,
                  stream or None)
    return launch


def raw_kernel(dtype, x: int, skip: int, skip_mode, bias: int, gamma: int, beta: int, y: int, sum_out: int,
                   workspace: int, workspace_size: int, n: int, channels: int, spatial: int, groups: int,
                   epsilon: float, activation, stream: int = 0, plan: tuple = (0, 0, False)) -> tuple[int, int, bool]:
    """Launches GroupNorm; returns the plan that ran (chunks, chunk_len, cluster). plan: one to force,
    (chunks, chunk_len) or (chunks, chunk_len, cluster); chunks 0: the plugin's (plan)."""
    ran = (ctypes.c_longlong * 3)()
    launch = launcher(dtype, skip_mode, n, channels, spatial, groups, epsilon, activation, plan)
    kernels.check(launch(x, skip, bias, gamma, beta, y, sum_out, workspace, workspace_size, stream, ran), "group_norm")
    return ran[0], ran[1], bool(ran[2])


def _plan3(plan: tuple) -> tuple[int, int, bool]:
    if len(plan) not in (2, 3):
        raise ValueError(f"plan must be (chunks, chunk_len) or (chunks, chunk_len, cluster); got {plan!r}")
    return int(plan[0]), int(plan[1]), bool(plan[2]) if len(plan) == 3 else False


DEVICE_KEYS = ("sms", "smem_per_sm", "smem_per_block", "max_cluster")  # GroupNormDevice


def plan(n: int, groups: int, group_size: int, dtype="float32", skip_mode="none",
                    device: bool | dict = True) -> tuple[int, int, bool]:
    """(chunks per group, elements per chunk, cluster): the plan the plugin picks when configured.
    device True: on the current GPU; False: the two-launch plan (the same everywhere); a dict like
    device()'s: on such a GPU, without a CUDA call. cluster True: one launch, each group's
    chunks one thread-block cluster (sm_90+)."""
    chunks, chunk_len, cluster = ctypes.c_longlong(), ctypes.c_longlong(), ctypes.c_int()
    head = (kernels.dtype_id(dtype), n, groups, group_size, skip_mode_id(skip_mode))
    outs = (ctypes.byref(chunks), ctypes.byref(chunk_len), ctypes.byref(cluster))
    if device is True:
        kernels.load().trtp_group_norm_configure(*head, *outs)
    else:
        desc = (ctypes.c_int * 4)(*(device[k] for k in DEVICE_KEYS)) if device else None
        kernels.load().trtp_group_norm_plan(*head, desc, *outs)
    return chunks.value, chunk_len.value, bool(cluster.value)


def candidates(n: int, groups: int, group_size: int, dtype="float32", skip_mode="none") -> list[tuple]:
    """Every plan worth forcing on the current GPU (benchmark sweeps, tests): the two launches, then
    one launch with clusters of 1, 2, 4, 8, 16 CTAs whose chunks fit its shared memory (none below sm_90)."""
    plans = [plan(n, groups, group_size, dtype, skip_mode, device=False)]
    dev = device()
    per_elem = (4 if kernels.dtype_id(dtype) == kernels.dtype_id("float32") else 2) * (2 if skip_mode == "full" else 1)
    for size in (1, 2, 4, 8, 16):
        chunk_len = math.ceil(math.ceil(group_size / size) / 256) * 256  # a multiple of 256, as the plugin's
        if size <= dev["max_cluster"] and chunk_len * per_elem <= dev["smem_per_block"]:
            plans.append((math.ceil(group_size / chunk_len), chunk_len, True))
    return list(dict.fromkeys(plans))


def device() -> dict[str, int]:
    """What the GroupNorm cluster path knows about the current GPU; max_cluster 0: no clusters
    (below sm_90, or the build has no sm_90+ image)."""
    vals = [ctypes.c_int() for _ in DEVICE_KEYS]
    kernels.load().trtp_group_norm_device(*(ctypes.byref(v) for v in vals))
    return dict(zip(DEVICE_KEYS, (v.value for v in vals)))


@functools.lru_cache(maxsize=1024)
def workspace_size(n: int, groups: int, layout: str | None = None) -> int:
    """Workspace bytes the plugin asks for with batch n (covers every smaller shape), for a layout
    ("channels_first", "channels_last"; None: enough for either)."""
    return kernels.load().trtp_group_norm_workspace(n, groups, -1 if layout is None else LAYOUTS[layout])


#: GroupNormLayout ids
LAYOUTS = {"channels_first": 0, "channels_last": 1}


def channel_stride(t) -> int | None:
    """The pixel stride of a logical N, C, spatial... tensor stored channels-last (channels contiguous,
    pixels `cs` >= C elements apart in order, as torch.channels_last or a view of a [N, spatial..., cs]
    buffer); None where it is not stored so. Dims of size 1 have no stride that matters: a tensor whose
    spatial dims are all 1 is both layouts (cs: the sample stride, or C for one sample)."""
    if t.dim() < 3 or (t.stride(1) != 1 and t.shape[1] > 1):
        return None
    spatial = [d for d in range(2, t.dim()) if t.shape[d] > 1]
    cs = t.stride(spatial[-1]) if spatial else t.stride(0) if t.shape[0] > 1 else t.shape[1]
    expect = cs
    for d in range(t.dim() - 1, 1, -1):
        if t.shape[d] > 1 and t.stride(d) != expect:
            return None
        expect *= t.shape[d]
    return cs if cs >= t.shape[1] and (t.shape[0] == 1 or t.stride(0) == expect) else None


def empty_like(x):
    """An uninitialized tensor laid out as x: contiguous, or channels-last with x's channel stride (its
    whole [N, spatial..., cs] buffer, the pad included, allocated)."""
    import torch

    cs = None if x.is_contiguous() else channel_stride(x)
    if cs is None:
        return torch.empty_like(x, memory_format=torch.contiguous_format)
    buf = torch.empty((x.shape[0],) + tuple(x.shape[2:]) + (cs,), dtype=x.dtype, device=x.device)
    return buf[..., : x.shape[1]].permute(0, x.dim() - 1, *range(1, x.dim() - 1))


def resident_plan(n: int, channels: int, spatial: int, groups: int, dtype="float32", skip_mode="none",
                  layout="channels_first", stride: int = 0, configured: bool = True, device: dict | None = None,
                  ctas_per_sm: int = 1, whole_segments: bool = False, windows: int = 1,
                  picked: bool = False, cluster: int = 0) -> tuple[int, int, int, bool, bool, int]:
    """(grid, per, resident, fused, narrow, cluster): the resident design's plan on the current GPU (configured),
    on a described one (device: sms, smem_per_block a CTA may opt into, max_cluster its largest thread-block
    cluster, 0 if absent; a pure function, no GPU needed;
    picked: the plan the plugin picks there, groupNormResidentPick, else its fused plan), or its two
    launches (configured False, no device: the same everywhere). ctas_per_sm 2: fused CTAs
    sharing each SM's shared memory two ways (16-bit channels-last narrow: 8-byte packs); 1: the plugin's.
    whole_segments: each CTA whole groups (channels-first; channels-last a sample's window of whole
    groups, grid = samples x windows), one launch with no grid-wide barrier (groupNormWholeSegmentPlan;
    grid 0: none). windows (channels-last fused plans): each range's channels cut into this many windows of
    whole groups, a CTA each (0: as many as keep each window whole 16-byte packs; 1: the plugin's; -1: none,
    whatever the plugin picks). cluster 2-8: each group (channels-last: a sample's window of groups) cut into
    that many CTAs of one thread-block cluster, a cluster barrier between the phases (groupNormClusterPlan;
    grid 0: none)."""
    out = (ctypes.c_longlong * PLAN_VALUES)()
    dev = device or {}
    kernels.load().trtp_group_norm_resident_plan(kernels.dtype_id(dtype), LAYOUTS[layout], stride, n, channels, spatial,
                                                 groups, skip_mode_id(skip_mode),
                                                 2 if picked and device else int(configured and device is None),
                                                 dev.get("sms", 0), dev.get("smem_per_block", 0), ctas_per_sm,
                                                 dev.get("max_cluster", 0), windows, int(whole_segments), cluster, out)
    return _plan(out)


#: a resident plan's values through the C entries: grid, per, resident, fused, narrow, cluster
PLAN_VALUES = 6


def in_registers(n: int, channels: int, spatial: int, groups: int, plan: tuple, device: dict, dtype="float16",
                 layout="channels_first", stride: int = 0, lean: bool = True) -> tuple[int, int, int, int, int]:
    """(packs per thread, elements per pack, CTAs per group, threads per CTA, pixels per step): how resident plan
    `plan` (resident_plan's) of a shape without skip runs held in registers on a GPU described by `device` (sms,
    max_cluster), packs 0 where it does not (groupNormInRegisters: a pure function, no GPU needed). lean False: the
    launch has a bias or a sum output."""
    out = (ctypes.c_longlong * 5)()
    kernels.load().trtp_group_norm_in_registers(kernels.dtype_id(dtype), LAYOUTS[layout], stride, n, channels, spatial,
                                                groups, (ctypes.c_longlong * PLAN_VALUES)(*plan), int(lean),
                                                device.get("sms", 0), device.get("max_cluster", 0), out)
    return tuple(int(v) for v in out)


def _plan(v) -> tuple[int, int, int, bool, bool, int]:
    return int(v[0]), int(v[1]), int(v[2]), bool(v[3]), bool(v[4]), int(v[5])


def resident_first(n: int, channels: int, spatial: int, groups: int, dtype="float32", skip_mode="none",
                   activation="none", clusters: bool = True) -> bool:
    """Whether the plugin runs this channels-first shape with the resident design rather than the split
    one, where its plan on the GPU is fused and, where only the cluster rule says so, the cluster plan
    (groupNormResidentFirst: where that measured faster). clusters False: as where no cluster plan runs."""
    return bool(kernels.load().trtp_group_norm_resident_first(
        kernels.dtype_id(dtype), n, channels, spatial, groups, skip_mode_id(skip_mode),
        kernels.lookup(ACTIVATION_IDS, activation, "activation"), int(clusters)))


#: the barriers of trtp_group_norm_floor (GroupNormFloor)
FLOORS = {"none": 0, "cta": 1, "cluster": 2, "grid": 3}


def floor(x, y, barrier: str, ctas: int, cluster: int = 0) -> None:
    """A one-launch design's floor (launchGroupNormFloor, for the benchmark): x's bytes copied to y by `ctas`
    CTAs, each its share through shared memory, with a barrier between its loads and its stores: "none", "cta",
    "cluster" (clusters of `cluster` CTAs, sm_90+) or "grid" (a cooperative launch). x and y: CUDA tensors of the
    same bytes (a multiple of 16), 16-byte aligned. Raises KernelError where the launch is refused (a share past a
    CTA's shared memory; for "grid", more CTAs than fit at once)."""
    if barrier not in FLOORS:
        raise ValueError(f"barrier must be one of {', '.join(FLOORS)}; got {barrier!r}")
    nbytes = x.numel() * x.element_size()
    if not (x.is_cuda and y.is_cuda) or y.numel() * y.element_size() != nbytes:
        raise ValueError("x and y must be CUDA tensors of the same bytes")
    with kernels.on_device(x):
        kernels.check(kernels.load().trtp_group_norm_floor(FLOORS[barrier], x.data_ptr(), y.data_ptr(), nbytes, ctas,
                                                           cluster, kernels.stream_of(x)), "group_norm floor")


def channels_last_ok(dtype, channels: int, stride: int = 0) -> bool:
    """Whether a channels-last shape has a kernel (a row of packs of a pixel within a CTA's threads)."""
    return bool(kernels.load().trtp_group_norm_channels_last_ok(kernels.dtype_id(dtype), channels, stride))


def kernel(x, skip=None, *, num_groups: int, gamma, beta=None, bias=None, activation: str = "none",
           epsilon: float = EPSILON, output_sum: bool = False, out=None, sum_out=None, workspace=None,
           plan: tuple | None = None, resident: tuple | bool | None = None, layout: str | None = None,
           return_plan: bool = False):
    """s = x (+ bias[c]) (+ skip); y = act(GroupNorm(s) * gamma + beta) over x = N, C, spatial...
    Returns y, or (y, s) with output_sum; with return_plan, (that, the plan that ran). x contiguous
    (channels-first) or stored channels-last (channel_stride(x): skip, out, sum_out laid out alike;
    a per-channel skip [N, C, 1, ...] with the same channel stride). skip: like x or [N, C, 1, ...].
    workspace: a CUDA uint8 tensor of at least workspace_size(N, num_groups) bytes (allocated when
    None). The design: the plugin's (resident None; channels-first, the split one but where
    choose() says; asked once per shape); channels-first, plan (chunks, chunk_len[,
    cluster]) or resident False forces the split one; channels-last, or resident True / a plan (grid,
    per, resident, fused[, narrow[, cluster]]) channels-first, the resident one (True: the plugin's plan). layout: None
    reads it from x's strides (contiguous: channels-first); "channels_last" for a tensor that is both
    (all spatial dims 1)."""
    import torch

    if x.dim() < 3:
        raise ValueError(f"x must be N, C, spatial... (rank >= 3); got {tuple(x.shape)}")
    n, c = x.shape[0], x.shape[1]
    spatial = x.numel() // (n * c) if n * c else 0
    if layout not in (None, *LAYOUTS):
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}; got {layout!r}")
    cs = None if layout != "channels_last" and x.is_contiguous() else channel_stride(x)
    if cs is None and (layout == "channels_last" or not x.is_contiguous()):
        raise ValueError("x must be contiguous or stored channels-last (channels contiguous, pixels in order)")
    if cs is not None and not channels_last_ok(kernels.dtype_name(x), c, cs):
        raise ValueError(f"channels-last GroupNorm has no kernel for {c} channels of {x.dtype} (a pixel's packs past a "
                         "CTA's threads); pass x contiguous")
    y = empty_like(x) if out is None else out
    s = (empty_like(x) if sum_out is None else sum_out) if output_sum else None
    for t, name in ((y, "out"), (s, "sum_out")):
        if t is not None and (t.shape != x.shape or t.dtype != x.dtype or _stride_of(t, cs) != cs):
            raise ValueError(f"{name} must be laid out as x ({tuple(x.shape)}, {x.dtype}, channel stride {cs})")
    skip_ptr, mode = 0, "none"
    if skip is not None:
        per_channel = (n, c) + (1,) * (x.dim() - 2)
        if skip.shape == x.shape and skip.dtype == x.dtype and _stride_of(skip, cs) == cs:
            skip_ptr, mode = skip.data_ptr(), "full"
        elif tuple(skip.shape) == per_channel and skip.dtype == x.dtype and skip.stride(1) == 1 and (
                n == 1 or skip.stride(0) == (cs or c)):
            skip_ptr, mode = skip.data_ptr(), "per_channel"
        else:
            raise ValueError(f"skip {tuple(skip.shape)} must be laid out as x {tuple(x.shape)}, or be [N, C, 1, ...]")
    if not x.is_cuda or (skip is not None and not skip.is_cuda):
        raise ValueError("x and skip must be CUDA tensors")
    size = workspace_size(max(n, 1), num_groups)
    if workspace is None:
        workspace = torch.empty(size, dtype=torch.uint8, device=x.device)
    dtype = kernels.dtype_name(x)
    args = (kernels.weight(bias, "bias", c), kernels.weight(gamma, "gamma", c), kernels.weight(beta, "beta", c),
            y.data_ptr(), 0 if s is None else s.data_ptr(), workspace.data_ptr(), workspace.numel(), n, c, spatial,
            num_groups, float(epsilon), activation, kernels.stream_of(x))
    with kernels.on_device(x):
        if cs is None and resident is None and plan is None and n * c * spatial and num_groups > 0 and \
                c % num_groups == 0:
            choice = _choice(x.device.index, dtype, n, c, spatial, num_groups, mode, activation)
            resident, plan = (choice[:PLAN_VALUES] if choice[0] > 0 else False), choice[PLAN_VALUES:]
        if cs is not None or resident not in (None, False):
            forced = None if resident in (None, True) else tuple(resident)
            ran = raw_resident(dtype, "channels_first" if cs is None else "channels_last", cs or 0, x.data_ptr(),
                               skip_ptr, mode, *args, plan=forced)
        else:
            ran = raw_kernel(dtype, x.data_ptr(), skip_ptr, mode, *args, plan or (0, 0, False))
    result = (y, s) if output_sum else y
    return (result, ran) if return_plan else result


def _stride_of(t, cs: int | None = None) -> int | None:
    """t's channel stride where it is stored channels-last (also when contiguous, if cs asks for it)."""
    return None if t.is_contiguous() and cs is None else channel_stride(t)


def resident_launcher(dtype, layout: str, stride: int, skip_mode, n: int, channels: int, spatial: int, groups: int,
                      epsilon: float, activation, plan: tuple | None = None):
    """raw_resident with all but the pointers resolved once: launch(x, skip, bias, gamma, beta, y, sum_out,
    workspace, workspace_size, stream, ran=None) -> the C entry's code (ran: a c_longlong[PLAN_VALUES])."""
    forced = None if plan is None else (ctypes.c_longlong * PLAN_VALUES)(
        *(int(v) for v in (tuple(plan) + (0, 0))[:PLAN_VALUES]))
    fn, dt, mode = kernels.load().trtp_group_norm_resident, kernels.dtype_id(dtype), skip_mode_id(skip_mode)
    lay, act = LAYOUTS[layout], kernels.lookup(ACTIVATION_IDS, activation, "activation")

    def launch(x, skip, bias, gamma, beta, y, sum_out, workspace, workspace_size, stream, ran=None):
        return fn(dt, lay, stride, x, skip or None, mode, bias or None, gamma, beta or None, y, sum_out or None,
                  workspace or None, workspace_size, n, channels, spatial, groups, epsilon, act, forced, ran,
                  stream or None)
    return launch


def raw_resident(dtype, layout: str, stride: int, x: int, skip: int, skip_mode, bias: int, gamma: int, beta: int,
                 y: int, sum_out: int, workspace: int, workspace_size: int, n: int, channels: int, spatial: int,
                 groups: int, epsilon: float, activation, stream: int = 0,
                 plan: tuple | None = None) -> tuple[int, int, int, bool, bool]:
    """Launches GroupNorm's resident design; returns the plan that ran (grid, per, resident, fused,
    narrow, cluster). plan: one to force (narrow and cluster may be left out: none), None: the plugin's
    (resident_plan)."""
    ran = (ctypes.c_longlong * PLAN_VALUES)()
    launch = resident_launcher(dtype, layout, stride, skip_mode, n, channels, spatial, groups, epsilon, activation, plan)
    kernels.check(launch(x, skip, bias, gamma, beta, y, sum_out, workspace, workspace_size, stream, ran), "group_norm")
    return _plan(ran)


def _chosen(n: int, channels: int, spatial: int, groups: int, dtype, skip_mode, activation, layout: str,
            stride: int) -> tuple:
    """trtp_group_norm_choose's 9 values, as trtp_group_norm_chosen takes them: the resident plan's 6 (grid
    0: not chosen), the split plan's 3."""
    out = (ctypes.c_longlong * (PLAN_VALUES + 3))()
    kernels.load().trtp_group_norm_choose(kernels.dtype_id(dtype), LAYOUTS[layout], stride, n, channels, spatial, groups,
                                          skip_mode_id(skip_mode), kernels.lookup(ACTIVATION_IDS, activation,
                                                                                 "activation"), out)
    return tuple(out)


def choose(n: int, channels: int, spatial: int, groups: int, dtype="float32", skip_mode="none", activation="none",
           layout: str = "channels_first", stride: int = 0) -> tuple[tuple | None, tuple[int, int, bool]]:
    """What the plugin runs this shape with on the current GPU (groupNormChoose): (the resident plan (grid,
    per, resident, fused, narrow, cluster), or None where it runs the split design; the split plan (chunks,
    chunk_len, cluster))."""
    v = _chosen(n, channels, spatial, groups, dtype, skip_mode, activation, layout, stride)
    p = PLAN_VALUES
    return (_plan(v[:p]) if v[0] > 0 else None), (v[p], v[p + 1], bool(v[p + 2]))


@functools.lru_cache(maxsize=256)
def _choice(device: int, dtype: str, n: int, channels: int, spatial: int, groups: int, skip_mode: str,
            activation) -> tuple:
    """_chosen() for a channels-first shape on `device` (the current one when called), once per shape."""
    return _chosen(n, channels, spatial, groups, dtype, skip_mode, activation, "channels_first", 0)


def chosen_launcher(dtype, skip_mode, n: int, channels: int, spatial: int, groups: int, epsilon: float, activation,
                    choice: tuple):
    """trtp_group_norm_chosen for a channels-first shape with all but the pointers resolved once (choice:
    _choice's): launch(x, skip, bias, gamma, beta, y, sum_out, workspace, workspace_size, stream) -> the
    C entry's code."""
    fn, dt, mode = kernels.load().trtp_group_norm_chosen, kernels.dtype_id(dtype), skip_mode_id(skip_mode)
    act, chosen = kernels.lookup(ACTIVATION_IDS, activation, "activation"), (ctypes.c_longlong * len(choice))(*choice)

    def launch(x, skip, bias, gamma, beta, y, sum_out, workspace, workspace_size, stream):
        return fn(dt, 0, 0, x, skip or None, mode, bias or None, gamma, beta or None, y, sum_out or None,
                  workspace or None, workspace_size, n, channels, spatial, groups, epsilon, act, chosen, stream or None)
    return launch
