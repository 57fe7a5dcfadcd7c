"""ctypes access to the bare CUDA kernels (libtrtplugins_kernels.so, no TensorRT).

Any op by name, as its plugin is created and run: `Kernel(op, **fields)` takes the op's fields
(Python values, as create_plugin takes them: the same field table checks them) and is called on
torch CUDA tensors, launching on torch's current stream what the plugin's enqueue launches:

    k = Kernel("SkipNorm", norm="rms", gamma=g, epsilon=1e-6)   # once: fields checked, weights kept
    y = k(x)                                                     # per call: configure + launch

Create one per set of fields (a module's init) and call it per step: a call only configures for
its shapes and launches (no upload after the first on a device, so it can be captured in a CUDA
graph). `run(op, *inputs, **fields)` does both at once.

Beside it, each op's module (trtplugins.ops.<op>) binds its kernel's own entry points (`kernel`:
torch tensors, device-pointer weights; `raw_kernel`: pointers as ints), with what only tests and
benchmarks force (variants, plans). The library describes every entry point (trtp_entries: their
signatures from their C types) and the enums no field names (trtp_enums): this module declares
them from that; no C signature is restated in Python.

The library is found through $TRTPLUGINS_KERNELS_LIB, else where the plugin
libraries are searched (trtplugins.loader.search_dirs); the error lists every path tried.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
from pathlib import Path
from typing import Any

from . import schema
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
    """The enums the entry points take that no op field names: "dtype", "group_norm_skip",
    "skip_norm_variant" (the named SkipNorm variants: "aot", the Triton kernels built ahead of time)."""
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


_DTYPE_NAMES: dict = {}  # torch dtype -> its name, once known to the library


def dtype_name(t: Any) -> str:
    name = _DTYPE_NAMES.get(t.dtype)
    if name is None:
        name = str(t.dtype).replace("torch.", "")
        if name not in enums()["dtype"]:
            raise TypeError(f"dtype {t.dtype} not supported; use float32, float16 or bfloat16")
        _DTYPE_NAMES[t.dtype] = name
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
    """The current stream of x's GPU (the raw handle, as Inductor's generated code reads it)."""
    return current_stream(x.device.index)


def current_stream(index: int) -> int:
    """The current stream of GPU `index` (the raw handle)."""
    global _raw_stream
    if _raw_stream is None:
        import torch

        _raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
            lambda i: torch.cuda.current_stream(i).cuda_stream)
    return _raw_stream(index)


_raw_stream = None  # torch's reader of a GPU's current stream, once torch is imported


def on_device(x: Any):
    """A context making x's GPU the current one (nothing to do, the common case, when it is)."""
    import torch

    return contextlib.nullcontext() if x.device.index == torch.cuda.current_device() else torch.cuda.device(x.device)


# --- any op by its fields (capi/run.h) --------------------------------------------------------


def _dims(shapes) -> ctypes.Array:
    """Blocks of 9 int64 (nbDims, d[0..7]) for the C entry."""
    flat = []
    for s in shapes:
        if len(s) > 8:
            raise ValueError(f"shape {tuple(s)}: rank {len(s)} > 8")
        flat += [len(s), *s] + [0] * (8 - len(s))
    return (ctypes.c_longlong * max(1, len(flat)))(*flat)


def _ints(values) -> ctypes.Array:
    return (ctypes.c_int * max(1, len(values)))(*values)


class Kernel:
    """One op of the list, created from its fields the way its plugin is (see the module doc)."""

    def __init__(self, op: str, **fields: Any):
        from .fields import field_array  # the conversion create_plugin uses

        spec = schema.spec(op)
        unknown = sorted(set(fields) - {f.name for f in spec.fields})
        if unknown:
            raise TypeError(f"{op}: unknown field(s) {unknown}; fields are {[f.name for f in spec.fields]}")
        typed = [(f.name, *field_array(spec, f, _host(v))) for f in spec.fields if (v := fields.get(f.name)) is not None]
        self._keep = [a for _, a, _ in typed]  # alive until created
        codes = enums()["field_type"]
        lib = load()
        self._h = lib.trtp_op_create(op.encode(), len(typed), (ctypes.c_char_p * max(1, len(typed)))(*[n.encode() for n, _, _ in typed]),
                                     _ints([codes[t] for _, _, t in typed]),
                                     (ctypes.c_void_p * max(1, len(typed)))(*[a.ctypes.data for a in self._keep]),
                                     _ints([a.size for a in self._keep]))
        self.op, self._devices = op, set()
        if not self._h:
            raise KernelError(f"{op}: {lib.trtp_last_error().decode()}")

    def __del__(self):
        if getattr(self, "_h", None):
            load().trtp_op_destroy(self._h)
            self._h = None

    def _call(self, fn: str, *args) -> int:
        code = getattr(load(), fn)(self._h, *args)
        if code < 0:
            raise KernelError(f"{self.op}: {load().trtp_last_error().decode()}")
        return code

    @property
    def nb_outputs(self) -> int:
        return self._call("trtp_op_nb_outputs")

    def output_shape(self, *shapes) -> tuple[int, ...]:
        """Every output's shape for inputs of these shapes."""
        out = (ctypes.c_longlong * 9)()
        self._call("trtp_op_output_dims", len(shapes), _ints([0] * len(shapes)), _dims(shapes), out)
        return tuple(out[1:1 + out[0]])

    def configure(self, dtype: str, *shapes) -> None:
        """What the plugin's configure does for inputs of these shapes: checks, per-shape choices."""
        outs = [self.output_shape(*shapes)] * self.nb_outputs
        n = len(shapes) + len(outs)
        self._call("trtp_op_configure", len(shapes), len(outs), _ints([dtype_id(dtype)] * n), _dims([*shapes, *outs]))

    def workspace_size(self, dtype: str, *shapes) -> int:
        """Workspace bytes for inputs of these shapes (and any smaller)."""
        return self._call("trtp_op_workspace", len(shapes), _ints([dtype_id(dtype)] * len(shapes)), _dims(shapes))

    def __call__(self, *inputs, out=None, workspace=None):
        """Outputs for these CUDA tensors (one, or a tuple); `out`: the output tensor(s) to write."""
        import torch

        x = inputs[0]
        dtype, shapes = dtype_name(x), [tuple(t.shape) for t in inputs]
        for i, t in enumerate(inputs):
            data(t, f"input {i}")
        self.configure(dtype, *shapes)
        shape = self.output_shape(*shapes)
        outs = [torch.empty(shape, dtype=x.dtype, device=x.device) for _ in range(self.nb_outputs)] if out is None else (
            [out] if torch.is_tensor(out) else list(out))
        for o in outs:
            if tuple(o.shape) != shape or o.dtype != x.dtype or o.device != x.device:
                raise ValueError(f"out must be {shape} {x.dtype} on {x.device}; got {tuple(o.shape)} {o.dtype} on {o.device}")
        size = self.workspace_size(dtype, *shapes)
        if workspace is None and size:
            workspace = torch.empty(size, dtype=torch.uint8, device=x.device)
        n = len(inputs) + len(outs)
        with on_device(x):
            if x.device.index not in self._devices:
                self._call("trtp_op_initialize")
                self._devices.add(x.device.index)
            self._call("trtp_op_enqueue", len(inputs), len(outs), _ints([dtype_id(dtype)] * n),
                       _dims([*shapes, *[tuple(o.shape) for o in outs]]),
                       (ctypes.c_void_p * len(inputs))(*[t.data_ptr() for t in inputs]),
                       (ctypes.c_void_p * len(outs))(*[data(o, "out") for o in outs]),
                       None if workspace is None else workspace.data_ptr(), stream_of(x))
        return outs[0] if len(outs) == 1 else tuple(outs)


def run(op: str, *inputs, **fields):
    """Kernel(op, **fields)(*inputs): one launch."""
    return Kernel(op, **fields)(*inputs)


def _host(value: Any) -> Any:
    """A torch tensor's values on the host (fields are host data, as for a plugin); anything else as is."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        return value.detach().cpu().numpy()
    return value
