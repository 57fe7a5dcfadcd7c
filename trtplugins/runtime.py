"""Deployment runtime: load the plugin library and a plan, run it on numpy arrays.

    from trtplugins.runtime import Engine
    with Engine("model.plan") as eng:          # loads plugins via trtplugins.load()
        y = eng({"x": x})["y"]                  # any shape inside the profile

TensorRT module: full `tensorrt`, TensorRT-RTX, or the lean runtime (lean runs
only engines built version-compatible). CUDA: cuda-python (`cuda.bindings`,
default) or pycuda (backend="pycuda"). One execution context, stream and set
of device buffers per thread, created on that thread's first call; calls from
many threads are safe and run concurrently.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from . import loader

#: kinds tried in order when no module is named: full TensorRT, TensorRT-RTX, the lean runtime
_KINDS = ("tensorrt", "rtx", "lean")


class EngineError(RuntimeError):
    pass


def trt_module(name: str | None = None):
    """The TensorRT module to run with: `name`, else the first importable of full TensorRT,
    TensorRT-RTX and the lean runtime."""
    try:
        return loader.trt_module(name) if name else loader.import_trt(_KINDS, need="Runtime")[0]
    except loader.PluginLibraryError as e:
        raise EngineError(f"no TensorRT runtime found: {e}") from None


# ------------------------------------------------------------------ CUDA backends


class _CudaPython:
    """cuda.bindings runtime API (what TensorRT's Python samples use)."""

    name = "cuda-python"

    def __init__(self, device: int):
        try:
            from cuda.bindings import runtime
        except ImportError as e:
            raise EngineError(f"cuda-python not installed ({e}): pip install cuda-python") from None
        self.rt, self.device = runtime, device

    def _ok(self, res):
        err, *rest = res if isinstance(res, tuple) else (res,)
        if err != self.rt.cudaError_t.cudaSuccess:
            raise EngineError(f"CUDA error {int(err)}: {self.rt.cudaGetErrorString(err)[1].decode()}")
        return rest[0] if len(rest) == 1 else rest

    def thread_init(self):
        try:
            self._ok(self.rt.cudaSetDevice(self.device))
        except EngineError as e:
            raise EngineError(f"CUDA device {self.device} unavailable (no usable GPU or NVIDIA driver here): {e}") from None

    def stream(self):
        return self._ok(self.rt.cudaStreamCreate())

    def handle(self, s) -> int:
        return int(s)

    def malloc(self, n: int):
        return self._ok(self.rt.cudaMalloc(max(n, 1)))

    def ptr(self, buf) -> int:
        return int(buf)

    def free(self, buf):
        self.rt.cudaFree(buf)

    def h2d(self, buf, arr: np.ndarray, s):
        self._ok(self.rt.cudaMemcpyAsync(buf, arr.ctypes.data, arr.nbytes,
                                         self.rt.cudaMemcpyKind.cudaMemcpyHostToDevice, s))

    def d2h(self, arr: np.ndarray, buf, s):
        self._ok(self.rt.cudaMemcpyAsync(arr.ctypes.data, buf, arr.nbytes,
                                         self.rt.cudaMemcpyKind.cudaMemcpyDeviceToHost, s))

    def sync(self, s):
        self._ok(self.rt.cudaStreamSynchronize(s))

    def destroy(self, s):
        self.rt.cudaStreamDestroy(s)


class _PyCuda:
    """pycuda driver API; each thread pushes the device's primary context once."""

    name = "pycuda"

    def __init__(self, device: int):
        try:
            import pycuda.driver as cuda
        except ImportError as e:
            raise EngineError(f"pycuda not installed ({e}); use the default cuda-python backend") from None
        cuda.init()
        self.cuda, self.dev = cuda, cuda.Device(device)
        self._local = threading.local()

    def thread_init(self):
        if not getattr(self._local, "ctx", None):
            self._local.ctx = self.dev.retain_primary_context()
            self._local.ctx.push()

    def stream(self):
        return self.cuda.Stream()

    def handle(self, s) -> int:
        return s.handle

    def malloc(self, n: int):
        return self.cuda.mem_alloc(max(n, 1))

    def ptr(self, buf) -> int:
        return int(buf)

    def free(self, buf):
        buf.free()

    def h2d(self, buf, arr, s):
        self.cuda.memcpy_htod_async(buf, arr, s)

    def d2h(self, arr, buf, s):
        self.cuda.memcpy_dtoh_async(arr, buf, s)

    def sync(self, s):
        s.synchronize()

    def destroy(self, s):
        pass


_BACKENDS = {"cuda-python": _CudaPython, "pycuda": _PyCuda}


# ------------------------------------------------------------------ engine


def load_plugins(trt, plugins) -> str | None:
    """plugins: None -> the default library for trt's major (trtplugins.load(); skipped with a
    None result if it is not built); False -> nothing; a path -> that library (*autoreg* via
    dlopen, others via registry.load_library)."""
    if plugins is False:
        return None
    try:
        if plugins is None:
            try:
                loader.library_path(loader.trt_major(trt))
            except loader.PluginLibraryError:
                if os.environ.get(loader.LIBRARY_ENV):
                    raise
                return None
        return str(loader.load(trt.get_plugin_registry(), plugins, mod=trt))
    except loader.PluginLibraryError as e:
        raise EngineError(str(e)) from None


class _Slot:
    """One thread's execution context, stream and buffers."""

    def __init__(self, ctx, stream):
        self.ctx, self.stream = ctx, stream
        self.bufs: dict[str, tuple[Any, int]] = {}  # name -> (buffer, capacity bytes)


class Engine:
    def __init__(self, plan, *, plugins=None, trt=None, backend: str = "cuda-python", device: int = 0,
                 verbose: bool = False):
        """plan: path or bytes. trt: a module or module name (default: first found).
        plugins: see load_plugins()."""
        self.trt = trt if trt is not None and not isinstance(trt, str) else trt_module(trt)
        if backend not in _BACKENDS:
            raise EngineError(f"backend {backend!r}: expected one of {sorted(_BACKENDS)}")
        data = plan if isinstance(plan, (bytes, bytearray, memoryview)) else None
        if data is None:
            if not Path(plan).is_file():
                raise EngineError(f"plan {plan}: no such file")
            data = Path(plan).read_bytes()
        self._cuda = _BACKENDS[backend](device)
        self._cuda.thread_init()  # fail early and cleanly without a GPU (TensorRT runtimes may crash there)
        t = self.trt
        self.logger = t.Logger(t.Logger.VERBOSE if verbose else t.Logger.WARNING)
        self.plugins = load_plugins(t, plugins)
        self._runtime = t.Runtime(self.logger)
        self.engine = self._runtime.deserialize_cuda_engine(bytes(data))
        if self.engine is None:
            hint = "" if self.plugins else " (no plugin library loaded: pass plugins=PATH if the plan has plugin layers)"
            raise EngineError(f"could not deserialize the plan with {t.__name__} {t.__version__}: see the "
                              f"TensorRT error above{hint}")
        e = self.engine
        names = [e.get_tensor_name(i) for i in range(e.num_io_tensors)]
        self.inputs = [n for n in names if e.get_tensor_mode(n) == t.TensorIOMode.INPUT]
        self.outputs = [n for n in names if n not in self.inputs]
        self.dtypes = {n: np.dtype(t.nptype(e.get_tensor_dtype(n))) for n in names}
        self._local = threading.local()
        self._lock = threading.Lock()
        self._slots: list[_Slot] = []
        self._closed = False

    def _slot(self) -> _Slot:
        s = getattr(self._local, "slot", None)
        if s is None:
            if self._closed:
                raise EngineError("engine is closed")
            self._cuda.thread_init()
            with self._lock:  # context creation on one engine is serialized
                ctx = self.engine.create_execution_context()
            if ctx is None:
                raise EngineError("could not create an execution context (out of device memory?)")
            s = _Slot(ctx, self._cuda.stream())
            self._local.slot = s
            with self._lock:
                self._slots.append(s)
        return s

    def _buffer(self, s: _Slot, name: str, nbytes: int) -> int:
        buf, cap = s.bufs.get(name, (None, 0))
        if cap < nbytes:
            if buf is not None:
                self._cuda.free(buf)
            buf, cap = self._cuda.malloc(nbytes), nbytes
            s.bufs[name] = (buf, cap)
        ptr = self._cuda.ptr(buf)
        s.ctx.set_tensor_address(name, ptr)
        return buf

    def __call__(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self.infer(feeds)

    def infer(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run once: set each input's shape from its array, copy in, execute, copy out."""
        missing, extra = set(self.inputs) - set(feeds), set(feeds) - set(self.inputs)
        if missing or extra:
            raise EngineError(f"inputs: missing {sorted(missing)}, unexpected {sorted(extra)}; engine takes {self.inputs}")
        s, cu = self._slot(), self._cuda
        host = {}
        for n in self.inputs:
            a = np.ascontiguousarray(feeds[n], dtype=self.dtypes[n])
            if not s.ctx.set_input_shape(n, a.shape):
                lo, _, hi = self.engine.get_tensor_profile_shape(n, 0)
                raise EngineError(f"input {n}: shape {a.shape} outside the profile {tuple(lo)}..{tuple(hi)}")
            host[n] = a
        for n, a in host.items():
            cu.h2d(self._buffer(s, n, a.nbytes), a, s.stream)
        out = {}
        for n in self.outputs:
            shape = tuple(s.ctx.get_tensor_shape(n))
            if any(d < 0 for d in shape):
                raise EngineError(f"output {n}: data-dependent shape {shape} is not supported here")
            out[n] = np.empty(shape, self.dtypes[n])
            self._buffer(s, n, out[n].nbytes)
        if not s.ctx.execute_async_v3(cu.handle(s.stream)):
            raise EngineError("execute_async_v3 failed: see the TensorRT error above")
        for n, a in out.items():
            cu.d2h(a, s.bufs[n][0], s.stream)
        cu.sync(s.stream)
        return out

    def close(self):
        """Free every thread's buffers, streams and contexts (call from any thread)."""
        with self._lock:
            self._closed = True
            slots, self._slots = self._slots, []
        for s in slots:
            for buf, _ in s.bufs.values():
                self._cuda.free(buf)
            self._cuda.destroy(s.stream)
            s.bufs.clear()
            s.ctx = None
        self._local = threading.local()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
