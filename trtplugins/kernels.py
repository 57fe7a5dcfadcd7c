"""ctypes access to the bare CUDA kernels (libtrtplugins_kernels.so, no TensorRT).

For tests and benchmarks: each call launches the same kernel the plugin's enqueue
launches. Functions take torch CUDA tensors (launched on torch's current stream);
the `raw_` functions take device pointers as ints.

The library is found through $TRTPLUGINS_KERNELS_LIB, else where the plugin
libraries are searched (trtplugins.loader.search_dirs); the error lists every path tried.
"""

from __future__ import annotations

import ctypes
import functools
import math
import os
from pathlib import Path
from typing import Any

from . import ops
from .loader import find_library

LIB_NAME = "libtrtplugins_kernels.so"
ENV_VAR = "TRTPLUGINS_KERNELS_LIB"

DTYPES = {"float32": 0, "float16": 1, "bfloat16": 2}
ACTIVATION_IDS = {name: i for i, name in enumerate(ops.ACTIVATIONS)}  # header enum order == ops order
GATED_ACT_IDS = ops.OPS[ops.GATED_ACTIVATION].enum_ids("activation")
GATE_IDS = ops.OPS[ops.GATED_ACTIVATION].enum_ids("gate")
NORM_IDS = {name: i for i, name in enumerate(ops.NORMS)}
GROUP_NORM_ACT_IDS = ops.OPS[ops.GROUP_NORM].enum_ids("activation")
GROUP_NORM_SKIP = {"none": 0, "full": 1, "per_channel": 2}  # GroupNormSkip in group_norm.h

_lib: ctypes.CDLL | None = None


class KernelError(RuntimeError):
    pass


def load() -> ctypes.CDLL:
    """Load the kernel library once; raise FileNotFoundError listing the paths tried."""
    global _lib
    if _lib is not None:
        return _lib
    env = os.environ.get(ENV_VAR)
    path, tried = (Path(env), [env]) if env else find_library(LIB_NAME)
    if path is None or not path.is_file():
        raise FileNotFoundError(
            f"{LIB_NAME} not found; set {ENV_VAR} or build it (pip install -e . with nvcc). Tried:\n"
            + "\n".join(f"  {p}" for p in tried)
        )
    _lib = ctypes.CDLL(str(path))
    _declare(_lib)
    return _lib


def _declare(lib: ctypes.CDLL) -> None:
    p, ll, i, f = ctypes.c_void_p, ctypes.c_longlong, ctypes.c_int, ctypes.c_float
    lib.trtp_bias_activation.argtypes = [i, p, p, p, ll, ll, i, p]
    lib.trtp_bias_activation.restype = i
    lib.trtp_gated_activation.argtypes = [i, p, p, p, p, p, ll, ll, i, i, p]
    lib.trtp_gated_activation.restype = i
    lib.trtp_skip_norm.argtypes = [i, p, p, p, p, p, p, p, ll, ll, f, i, ll, i, p, p, p]
    lib.trtp_skip_norm.restype = i
    lib.trtp_skip_norm_variant.argtypes = [i, i, i, ll, i, ll]
    lib.trtp_skip_norm_variant.restype = i
    lib.trtp_skip_norm_small_elems.argtypes = []
    lib.trtp_skip_norm_small_elems.restype = ll
    lib.trtp_skip_norm_candidates.argtypes = [i, i, i, ll, ctypes.POINTER(i), i]
    lib.trtp_skip_norm_candidates.restype = i
    z = ctypes.c_size_t
    pll, pi = ctypes.POINTER(ll), ctypes.POINTER(i)
    lib.trtp_group_norm.argtypes = [i, p, p, i, p, p, p, p, p, p, z, ll, ll, ll, ll, f, i, ll, ll, i, pll, p]
    lib.trtp_group_norm.restype = i
    lib.trtp_group_norm_plan.argtypes = [i, ll, ll, ll, i, pi, pll, pll, pi]
    lib.trtp_group_norm_plan.restype = None
    lib.trtp_group_norm_configure.argtypes = [i, ll, ll, ll, i, pll, pll, pi]
    lib.trtp_group_norm_configure.restype = None
    lib.trtp_group_norm_device.argtypes = [pi, pi, pi, pi]
    lib.trtp_group_norm_device.restype = None
    lib.trtp_group_norm_workspace.argtypes = [ll, ll]
    lib.trtp_group_norm_workspace.restype = z
    lib.trtp_error_string.argtypes = [i]
    lib.trtp_error_string.restype = ctypes.c_char_p
    lib.trtp_empty_launch.argtypes = [p]
    lib.trtp_empty_launch.restype = i


def _check(code: int, what: str) -> None:
    if code != 0:
        msg = load().trtp_error_string(code).decode()
        raise KernelError(f"{what} failed: CUDA error {code} ({msg})")


def _lookup(table: dict[str, int], key: str | int, what: str) -> int:
    if isinstance(key, int):
        if key not in table.values():
            raise ValueError(f"unknown {what} id {key}; known: {table}")
        return key
    try:
        return table[key]
    except KeyError:
        raise ValueError(f"unknown {what} {key!r}; known: {sorted(table)}") from None


# --- raw pointers ---------------------------------------------------------------------------


def raw_bias_activation(dtype, x: int, bias: int, y: int, rows: int, hidden: int, activation, stream: int = 0):
    code = load().trtp_bias_activation(
        _lookup(DTYPES, dtype, "dtype"), x, bias or None, y, rows, hidden,
        _lookup(ACTIVATION_IDS, activation, "activation"), stream or None,
    )
    _check(code, "bias_activation")


def raw_gated_activation(dtype, x: int, x2: int, gate_bias: int, linear_bias: int, y: int, rows: int, width: int,
                         activation, gate="first", stream: int = 0):
    code = load().trtp_gated_activation(
        _lookup(DTYPES, dtype, "dtype"), x, x2 or None, gate_bias or None, linear_bias or None, y, rows, width,
        _lookup(GATED_ACT_IDS, activation, "activation"), _lookup(GATE_IDS, gate, "gate"), stream or None,
    )
    _check(code, "gated_activation")


def raw_skip_norm(dtype, x: int, skip: int, bias: int, gamma: int, beta: int, y: int, sum_out: int,
                  rows: int, hidden: int, epsilon: float, norm, stream: int = 0, skip_rows: int = 0,
                  variant: int = -1, gamma_io: int = 0, beta_io: int = 0):
    code = load().trtp_skip_norm(
        _lookup(DTYPES, dtype, "dtype"), x, skip or None, bias or None, gamma, beta or None, y,
        sum_out or None, rows, hidden, epsilon, _lookup(NORM_IDS, norm, "norm"), skip_rows, variant,
        gamma_io or None, beta_io or None, stream or None,
    )
    _check(code, "skip_norm")


def skip_norm_variant(dtype, norm: str, skip: bool, hidden: int, io_weights: bool = False, rows: int | None = None) -> int:
    """The kernel variant the plugin picks for (dtype, norm, a skip input or not, hidden) when configured;
    io_weights: its gamma/beta are exact in the 16-bit dtype (launches get gamma_io/beta_io); rows: a
    launch's row count (None: a large one; launches of <= skip_norm_small_elems() elements run another variant)."""
    return load().trtp_skip_norm_variant(_lookup(DTYPES, dtype, "dtype"), _lookup(NORM_IDS, norm, "norm"), skip, hidden,
                                         io_weights, -1 if rows is None else rows)


def skip_norm_small_elems() -> int:
    """Launches of at most this many elements run the small-launch variant."""
    return load().trtp_skip_norm_small_elems()


def skip_norm_candidates(dtype, norm: str, skip: bool, hidden: int) -> list[int]:
    """Every kernel variant this build has that can run rows of `hidden` elements (benchmarks, tests)."""
    buf = (ctypes.c_int * 256)()
    n = load().trtp_skip_norm_candidates(_lookup(DTYPES, dtype, "dtype"), _lookup(NORM_IDS, norm, "norm"), skip,
                                         hidden, buf, 256)
    return list(buf[:min(n, 256)])


def raw_group_norm(dtype, x: int, skip: int, skip_mode, bias: int, gamma: int, beta: int, y: int, sum_out: int,
                   workspace: int, workspace_size: int, n: int, channels: int, spatial: int, groups: int,
                   epsilon: float, activation, stream: int = 0, plan: tuple = (0, 0, False)) -> tuple[int, int, bool]:
    """Launches GroupNorm; returns the plan that ran (chunks, chunk_len, cluster). plan: one to force,
    (chunks, chunk_len) or (chunks, chunk_len, cluster); chunks 0: the plugin's (group_norm_plan)."""
    chunks, chunk_len, cluster = _plan3(plan)
    ran = (ctypes.c_longlong * 3)()
    code = load().trtp_group_norm(
        _lookup(DTYPES, dtype, "dtype"), x, skip or None, _lookup(GROUP_NORM_SKIP, skip_mode, "skip mode"),
        bias or None, gamma, beta or None, y, sum_out or None, workspace or None, workspace_size, n, channels,
        spatial, groups, epsilon, _lookup(GROUP_NORM_ACT_IDS, activation, "activation"), chunks, chunk_len,
        int(cluster), ran, stream or None,
    )
    _check(code, "group_norm")
    return ran[0], ran[1], bool(ran[2])


def _plan3(plan: tuple) -> tuple[int, int, bool]:
    if len(plan) not in (2, 3):
        raise ValueError(f"plan must be (chunks, chunk_len) or (chunks, chunk_len, cluster); got {plan!r}")
    return int(plan[0]), int(plan[1]), bool(plan[2]) if len(plan) == 3 else False


GROUP_NORM_DEVICE_KEYS = ("sms", "smem_per_sm", "smem_per_block", "max_cluster")  # GroupNormDevice


def group_norm_plan(n: int, groups: int, group_size: int, dtype="float32", skip_mode="none",
                    device: bool | dict = True) -> tuple[int, int, bool]:
    """(chunks per group, elements per chunk, cluster): the plan the plugin picks when configured.
    device True: on the current GPU; False: the two-launch plan (the same everywhere); a dict like
    group_norm_device()'s: on such a GPU, without a CUDA call. cluster True: one launch, each group's
    chunks one thread-block cluster (sm_90+)."""
    chunks, chunk_len, cluster = ctypes.c_longlong(), ctypes.c_longlong(), ctypes.c_int()
    head = (_lookup(DTYPES, dtype, "dtype"), n, groups, group_size, _lookup(GROUP_NORM_SKIP, skip_mode, "skip mode"))
    outs = (ctypes.byref(chunks), ctypes.byref(chunk_len), ctypes.byref(cluster))
    if device is True:
        load().trtp_group_norm_configure(*head, *outs)
    else:
        desc = (ctypes.c_int * 4)(*(device[k] for k in GROUP_NORM_DEVICE_KEYS)) if device else None
        load().trtp_group_norm_plan(*head, desc, *outs)
    return chunks.value, chunk_len.value, bool(cluster.value)


def group_norm_candidates(n: int, groups: int, group_size: int, dtype="float32", skip_mode="none") -> list[tuple]:
    """Every plan worth forcing on the current GPU (benchmark sweeps, tests): the two launches, then
    one launch with clusters of 1, 2, 4, 8, 16 CTAs whose chunks fit its shared memory (none below sm_90)."""
    plans = [group_norm_plan(n, groups, group_size, dtype, skip_mode, device=False)]
    dev = group_norm_device()
    per_elem = (4 if _lookup(DTYPES, dtype, "dtype") == DTYPES["float32"] else 2) * (2 if skip_mode == "full" else 1)
    for size in (1, 2, 4, 8, 16):
        chunk_len = math.ceil(math.ceil(group_size / size) / 256) * 256  # a multiple of 256, as the plugin's
        if size <= dev["max_cluster"] and chunk_len * per_elem <= dev["smem_per_block"]:
            plans.append((math.ceil(group_size / chunk_len), chunk_len, True))
    return list(dict.fromkeys(plans))


def group_norm_device() -> dict[str, int]:
    """What the GroupNorm cluster path knows about the current GPU; max_cluster 0: no clusters
    (below sm_90, or the build has no sm_90+ image)."""
    vals = [ctypes.c_int() for _ in GROUP_NORM_DEVICE_KEYS]
    load().trtp_group_norm_device(*(ctypes.byref(v) for v in vals))
    return dict(zip(GROUP_NORM_DEVICE_KEYS, (v.value for v in vals)))


def group_norm_workspace(n: int, groups: int) -> int:
    """Workspace bytes the plugin asks for with batch n (covers every smaller shape)."""
    return load().trtp_group_norm_workspace(n, groups)


def empty_launch(stream: int = 0) -> None:
    """Launch an empty kernel (the latency floor for small launches)."""
    _check(load().trtp_empty_launch(stream or None), "empty_launch")


# --- torch tensors --------------------------------------------------------------------------


def _torch_dtype_name(t: Any) -> str:
    name = str(t.dtype).replace("torch.", "")
    if name not in DTYPES:
        raise TypeError(f"dtype {t.dtype} not supported; use float32, float16 or bfloat16")
    return name


def _data(t: Any, name: str, like: Any = None) -> int:
    if not t.is_cuda:
        raise ValueError(f"{name} must be a CUDA tensor")
    if not t.is_contiguous():
        raise ValueError(f"{name} must be contiguous")
    if like is not None and (t.shape != like.shape or t.dtype != like.dtype or t.device != like.device):
        raise ValueError(f"{name} must match x ({tuple(like.shape)}, {like.dtype}); got {tuple(t.shape)}, {t.dtype}")
    return t.data_ptr()


def _weight(t: Any, name: str, hidden: int) -> int:
    if t is None:
        return 0
    import torch

    if t.dtype != torch.float32 or t.numel() != hidden:
        raise ValueError(f"{name} must be {hidden} float32 values; got {t.numel()} {t.dtype}")
    return _data(t, name)


def _stream(x: Any) -> int:
    import torch

    return torch.cuda.current_stream(x.device).cuda_stream


def bias_activation(x, bias=None, activation: str = "gelu", out=None):
    """y = act(x + bias) over the last dim of x; `out` may be x (in place)."""
    import torch

    hidden = x.shape[-1] if x.dim() else 1
    y = torch.empty_like(x) if out is None else out
    rows = x.numel() // hidden if hidden else 0
    with torch.cuda.device(x.device):  # rows == 0 goes through too: the kernel must accept it
        raw_bias_activation(_torch_dtype_name(x), _data(x, "x"), _weight(bias, "bias", hidden),
                            _data(y, "out", x), rows, hidden, activation, _stream(x))
    return y


def gated_activation(x, x2=None, *, activation: str = "silu", gate: str = "first", gate_bias=None,
                     linear_bias=None, out=None):
    """y = act(gate + gate_bias) * (linear + linear_bias): the operands x and x2 (one shape), or without
    x2 the halves of x's last dim; `gate` ("first" / "second") names the one activated. `out` may be
    x or x2 (two inputs)."""
    import torch

    last = x.shape[-1]
    if x2 is None and last % 2:
        raise ValueError(f"x {tuple(x.shape)}: an odd last dim has no two halves")
    width = last if x2 is not None else last // 2
    shape = (*x.shape[:-1], width)
    y = torch.empty(shape, dtype=x.dtype, device=x.device) if out is None else out
    if tuple(y.shape) != shape or y.dtype != x.dtype:
        raise ValueError(f"out must be {shape} {x.dtype}; got {tuple(y.shape)} {y.dtype}")
    rows = x.numel() // last if last else 0
    with torch.cuda.device(x.device):
        raw_gated_activation(
            _torch_dtype_name(x), _data(x, "x"), 0 if x2 is None else _data(x2, "x2", x),
            _weight(gate_bias, "gate_bias", width), _weight(linear_bias, "linear_bias", width), _data(y, "out"),
            rows, width, activation, gate, _stream(x),
        )
    return y


def skip_norm(x, skip=None, *, gamma, beta=None, bias=None, norm: str = "layer", epsilon: float = 1e-5,
              output_sum: bool = False, out=None, sum_out=None, variant: int = -1, gamma_io=None, beta_io=None):
    """s = x (+ skip) (+ bias); y = norm(s) * gamma (+ beta). Returns y, or (y, s) with output_sum.

    skip is like x, or broadcasts over x's leading dims (its shape a suffix of x's, leading 1s
    allowed). variant: a kernel variant to force (-1: the one the plugin picks). gamma_io, beta_io:
    gamma and beta again in x's dtype, exactly equal to the float32 ones (the kernel then reads half
    the weight bytes)."""
    import torch

    hidden = x.shape[-1]
    y = torch.empty_like(x) if out is None else out
    s = (torch.empty_like(x) if sum_out is None else sum_out) if output_sum else None
    rows = x.numel() // hidden if hidden else 0
    skip_ptr, skip_rows = 0, 0
    if skip is not None:
        if skip.shape == x.shape:
            skip_ptr = _data(skip, "skip", x)
        else:
            lead = list(skip.shape[:-1])
            while lead and lead[0] == 1:
                lead.pop(0)
            if skip.dtype != x.dtype or skip.shape[-1] != hidden or tuple(lead) != tuple(x.shape[x.dim() - 1 - len(lead):-1]):
                raise ValueError(f"skip {tuple(skip.shape)} must be like x {tuple(x.shape)} or broadcast over its "
                                 "leading dims")
            skip_ptr, skip_rows = _data(skip, "skip"), max(1, skip.numel() // hidden)
    with torch.cuda.device(x.device):
        raw_skip_norm(
            _torch_dtype_name(x), _data(x, "x"), skip_ptr,
            _weight(bias, "bias", hidden), _weight(gamma, "gamma", hidden), _weight(beta, "beta", hidden),
            _data(y, "out", x), 0 if s is None else _data(s, "sum_out", x), rows, hidden, float(epsilon),
            norm, _stream(x), skip_rows, variant, _io_weight(gamma_io, gamma, x), _io_weight(beta_io, beta, x),
        )
    return (y, s) if output_sum else y


def _io_weight(t, ref, x) -> int:
    """The pointer of a weight copy in x's dtype (its values the caller's promise: equal to ref's;
    not compared here, which would synchronize, and break CUDA-graph capture)."""
    if t is None:
        return 0
    if ref is None or t.dtype != x.dtype or t.shape != ref.shape:
        raise ValueError(f"gamma_io/beta_io must be like gamma/beta {None if ref is None else tuple(ref.shape)} "
                         f"in x's dtype {x.dtype}; got {tuple(t.shape)} {t.dtype}")
    return _data(t, "gamma_io/beta_io")


def group_norm(x, skip=None, *, num_groups: int, gamma, beta=None, bias=None, activation: str = "none",
               epsilon: float = 1e-5, output_sum: bool = False, out=None, sum_out=None, workspace=None,
               plan: tuple | None = None, return_plan: bool = False):
    """s = x (+ bias[c]) (+ skip); y = act(GroupNorm(s) * gamma + beta) over x = N, C, spatial...
    Returns y, or (y, s) with output_sum; with return_plan, (that, the plan that ran). skip: like x
    or [N, C, 1, ...]. workspace: a CUDA uint8 tensor of at least group_norm_workspace(N, num_groups)
    bytes (allocated when None). plan: (chunks, chunk_len[, cluster]) to force (None: the plugin's,
    group_norm_plan on this GPU, looked up once per shape)."""
    import torch

    if x.dim() < 3:
        raise ValueError(f"x must be N, C, spatial... (rank >= 3); got {tuple(x.shape)}")
    n, c = x.shape[0], x.shape[1]
    spatial = x.numel() // (n * c) if n * c else 0
    y = torch.empty_like(x) if out is None else out
    s = (torch.empty_like(x) if sum_out is None else sum_out) if output_sum else None
    skip_ptr, mode = 0, "none"
    if skip is not None:
        if skip.shape == x.shape:
            skip_ptr, mode = _data(skip, "skip", x), "full"
        elif tuple(skip.shape) == (n, c) + (1,) * (x.dim() - 2) and skip.dtype == x.dtype:
            skip_ptr, mode = _data(skip, "skip"), "per_channel"
        else:
            raise ValueError(f"skip {tuple(skip.shape)} must be like x {tuple(x.shape)} or [N, C, 1, ...]")
    size = group_norm_workspace(max(n, 1), num_groups)
    if workspace is None:
        workspace = torch.empty(size, dtype=torch.uint8, device=x.device)
    dtype = _torch_dtype_name(x)
    with torch.cuda.device(x.device):
        if plan is None:
            plan = (0, 0, False)
            if n * c * spatial and num_groups > 0 and c % num_groups == 0:
                plan = _device_plan(x.device.index, dtype, n, num_groups, c // num_groups * spatial, mode)
        ran = raw_group_norm(
            dtype, _data(x, "x"), skip_ptr, mode, _weight(bias, "bias", c),
            _weight(gamma, "gamma", c), _weight(beta, "beta", c), _data(y, "out", x),
            0 if s is None else _data(s, "sum_out", x), workspace.data_ptr(), workspace.numel(), n, c, spatial,
            num_groups, float(epsilon), activation, _stream(x), plan,
        )
    result = (y, s) if output_sum else y
    return (result, ran) if return_plan else result


@functools.lru_cache(maxsize=256)
def _device_plan(device: int, dtype: str, n: int, groups: int, group_size: int, skip_mode: str):
    """group_norm_plan on `device` (the current one when called), once per shape."""
    return group_norm_plan(n, groups, group_size, dtype, skip_mode)
