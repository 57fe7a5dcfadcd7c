"""ctypes access to the bare CUDA kernels (libtrtplugins_kernels.so, no TensorRT).

For tests and benchmarks: each op's binding (trtplugins.ops.<op>.kernel, raw_kernel) launches the
same kernel the plugin's enqueue launches; its `kernel` takes torch CUDA tensors (launched on
torch's current stream), its `raw_kernel` device pointers as ints. The library describes its
entry points (trtp_entries: their signatures from their C types) and enums (trtp_enums): this
module declares them from that, and keeps only what every binding shares.

The library is found through $TRTPLUGINS_KERNELS_LIB, else where the plugin
libraries are searched (trtplugins.loader.search_dirs); the error lists every path tried.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
from pathlib import Path
from typing import Any

from .loader import find_library

LIB_NAME = "libtrtplugins_kernels.so"
ENV_VAR = "TRTPLUGINS_KERNELS_LIB"

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


#: ctypes type of each letter of trtp_entries()'s signatures (plugin_src/capi/capi.cu, Code)
_CODES = {"v": None, "i": ctypes.c_int, "q": ctypes.c_longlong, "f": ctypes.c_float, "z": ctypes.c_size_t,
          "p": ctypes.c_void_p, "s": ctypes.c_char_p, "I": ctypes.POINTER(ctypes.c_int),
          "Q": ctypes.POINTER(ctypes.c_longlong), "S": ctypes.POINTER(ctypes.c_char_p),
          "P": ctypes.POINTER(ctypes.c_void_p)}


def _declare(lib: ctypes.CDLL) -> None:
    """Every entry point's ctypes signature, as the library describes it (trtp_entries)."""
    for fn in ("trtp_entries", "trtp_enums"):
        getattr(lib, fn).restype, getattr(lib, fn).argtypes = ctypes.c_char_p, []
    for line in lib.trtp_entries().decode().splitlines():
        name, sig = line.split()
        result, args = sig.split(":")
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = _CODES[result], [_CODES[c] for c in args]


@functools.lru_cache(maxsize=None)
def enums() -> dict[str, dict[str, int]]:
    """The enums the entry points take that no op field names: "dtype", "group_norm_skip"."""
    return json.loads(load().trtp_enums())


def dtype_id(dtype: str | int) -> int:
    return lookup(enums()["dtype"], dtype, "dtype")


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


def empty_launch(stream: int = 0) -> None:
    """Launch an empty kernel (the latency floor for small launches)."""
    check(load().trtp_empty_launch(stream or None), "empty_launch")


# --- torch tensors --------------------------------------------------------------------------


def dtype_name(t: Any) -> str:
    name = str(t.dtype).replace("torch.", "")
    if name not in enums()["dtype"]:
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


