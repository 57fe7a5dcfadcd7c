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


def check(code: int, what: str) -> None:
    if code != 0:
        msg = load().trtp_error_string(code).decode()
        raise KernelError(f"{what} failed: CUDA error {code} ({msg})")


def lookup(table: dict[str, int], key: str | int, what: str) -> int:
    if isinstance(key, int):
        if key not in table.values():
            raise ValueError(f"unknown {what} id {key}; known: {table}")
        return key
    try:
        return table[key]
    except KeyError:
        raise ValueError(f"unknown {what} {key!r}; known: {sorted(table)}") from None


# --- raw pointers ---------------------------------------------------------------------------


def empty_launch(stream: int = 0) -> None:
    """Launch an empty kernel (the latency floor for small launches)."""
    check(load().trtp_empty_launch(stream or None), "empty_launch")


# --- torch tensors --------------------------------------------------------------------------


def dtype_name(t: Any) -> str:
    name = str(t.dtype).replace("torch.", "")
    if name not in DTYPES:
        raise TypeError(f"dtype {t.dtype} not supported; use float32, float16 or bfloat16")
    return name


def data(t: Any, name: str, like: Any = None) -> int:
    if not t.is_cuda:
        raise ValueError(f"{name} must be a CUDA tensor")
    if not t.is_contiguous():
        raise ValueError(f"{name} must be contiguous")
    if like is not None and (t.shape != like.shape or t.dtype != like.dtype or t.device != like.device):
        raise ValueError(f"{name} must match x ({tuple(like.shape)}, {like.dtype}); got {tuple(t.shape)}, {t.dtype}")
    return t.data_ptr()


def weight(t: Any, name: str, hidden: int) -> int:
    if t is None:
        return 0
    import torch

    if t.dtype != torch.float32 or t.numel() != hidden:
        raise ValueError(f"{name} must be {hidden} float32 values; got {t.numel()} {t.dtype}")
    return data(t, name)


def stream_of(x: Any) -> int:
    import torch

    return torch.cuda.current_stream(x.device).cuda_stream


