"""ctypes driver for libtrtplugins_trt<N>_harness.so: plugin methods called the
way TensorRT calls them, with real descriptors, without a TensorRT library,
for either interface: api=2 (IPluginV2DynamicExt, plugin version 1) or api=3
(IPluginV3, version 2: serialize() = its getFieldsToSerialize, deserialize() =
createPlugin(kRUNTIME) from them, attach() = attachToContext).
CPU-only methods (creation, serialization, output dims/types, formats,
configure, workspace) run anywhere; initialize/enqueue need a GPU."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from trtplugins import ops
from trtplugins.loader import find_library
from trtplugins.fields import field_array

# nvinfer1::DataType / TensorFormat / PluginFieldType values (same in 10.x and 11.x headers).
FLOAT, HALF, INT8, INT32, BOOL, UINT8, FP8, BF16, INT64 = 0, 1, 2, 3, 4, 5, 6, 7, 8
LINEAR, CHW2, HWC8, CHW32, HWC, HWC16, DHWC8, DHWC = 0, 1, 2, 5, 8, 11, 6, 12  # TensorFormat values
PF_FLOAT16, PF_FLOAT32, PF_FLOAT64, PF_INT8, PF_INT16, PF_INT32, PF_CHAR, PF_DIMS, PF_UNKNOWN, PF_BF16, PF_INT64 = range(11)
_PF = {"CHAR": PF_CHAR, "FLOAT32": PF_FLOAT32, "INT32": PF_INT32, "FLOAT16": PF_FLOAT16, "BF16": PF_BF16}

_c = ctypes
_P, _I, _L, _Z = _c.c_void_p, _c.c_int, _c.POINTER(_c.c_int64), _c.c_size_t
_SIGNATURES = {
    "th_trt_major": (_I, []),
    "th_create": (_P, [_c.c_char_p, _I, _I, _c.POINTER(_c.c_char_p), _c.POINTER(_I), _c.POINTER(_P), _c.POINTER(_I)]),
    "th_deserialize": (_P, [_c.c_char_p, _I, _c.c_char_p, _Z]),
    "th_attach": (_P, [_P]),
    "th_api": (_I, [_P]),
    "th_version": (_c.c_char_p, [_P]),
    "th_shape_change": (_I, [_P, _I, _I, _c.POINTER(_I), _L]),
    "th_schema": (_Z, [_c.c_char_p, _Z]),
    "th_serialize": (_Z, [_P, _P, _Z]),
    "th_clone": (_P, [_P]),
    "th_destroy": (None, [_P]),
    "th_nb_outputs": (_I, [_P]),
    "th_initialize": (_I, [_P]),
    "th_terminate": (None, [_P]),
    "th_output_type": (_I, [_P, _I, _c.POINTER(_I), _I]),
    "th_output_dims": (_I, [_P, _I, _I, _L, _L]),
    "th_supports": (_I, [_P, _I, _I, _I, _c.POINTER(_I), _c.POINTER(_I), _L]),
    "th_set_formats": (None, [_P, _c.POINTER(_I), _I]),
    "th_configure": (_I, [_P, _I, _I, _c.POINTER(_I), _L]),
    "th_workspace": (_Z, [_P, _I, _I, _c.POINTER(_I), _L]),
    "th_enqueue": (_I, [_P, _I, _I, _c.POINTER(_I), _L, _c.POINTER(_P), _c.POINTER(_P), _P, _P]),
    "th_enqueue_host_us": (_c.c_double, [_P, _I, _I, _c.POINTER(_I), _L, _c.POINTER(_P), _c.POINTER(_P), _P, _P, _I, _I]),
    "th_gpu_problem": (_Z, [_c.c_char_p, _I, _I, _I, _c.c_char_p, _Z]),
    "th_current_gpu_problem": (_Z, [_c.c_char_p, _Z]),
    "th_built_architectures": (_c.c_char_p, []),
}


def find_harness(major: int) -> Path | None:
    return find_library(f"libtrtplugins_trt{major}_harness.so")[0]


def _ints(values) -> ctypes.Array:
    return (ctypes.c_int * max(1, len(values)))(*values)


def _dims(shapes) -> ctypes.Array:
    flat = []
    for s in shapes:
        block = [len(s), *s] + [0] * (8 - len(s))
        flat += block
    return (ctypes.c_int64 * max(1, len(flat)))(*flat)


class Harness:
    def __init__(self, path: Path, api: int = 2):
        self.lib = ctypes.CDLL(str(path))
        for name, (res, args) in _SIGNATURES.items():
            fn = getattr(self.lib, name)
            fn.restype, fn.argtypes = res, args
        self.major = self.lib.th_trt_major()
        self.api = api

    def with_api(self, api: int) -> "Harness":
        """The same library, creating plugins of the other interface."""
        other = Harness.__new__(Harness)
        other.lib, other.major, other.api = self.lib, self.major, api
        return other

    def schema(self) -> str:
        n = self.lib.th_schema(None, 0)
        buf = ctypes.create_string_buffer(n + 1)
        self.lib.th_schema(buf, n + 1)
        return buf.value.decode()

    def create(self, name: str, raw_fields: list[tuple[str, int, np.ndarray]]) -> "Plugin | None":
        """raw_fields: (name, PluginFieldType, data array); the length is the array size."""
        keep = [np.ascontiguousarray(a) for _, _, a in raw_fields]
        names = (ctypes.c_char_p * max(1, len(raw_fields)))(*[n.encode() for n, _, _ in raw_fields])
        types = _ints([t for _, t, _ in raw_fields])
        data = (ctypes.c_void_p * max(1, len(raw_fields)))(*[a.ctypes.data for a in keep])
        lengths = _ints([a.size for a in keep])
        ptr = self.lib.th_create(name.encode(), self.api, len(raw_fields), names, types, data, lengths)
        return Plugin(self, name, ptr) if ptr else None

    def create_from(self, name: str, **attrs) -> "Plugin":
        """Typed fields from Python values, by the same conversion trtplugins.create_plugin uses."""
        plugin = self.create_from_or_none(name, **attrs)
        assert plugin is not None, f"{name} creation failed for {sorted(attrs)}"
        return plugin

    def create_from_or_none(self, name: str, **attrs) -> "Plugin | None":
        """create_from, None where the library has no such creator or refuses the fields."""
        spec = ops.OPS.get(name)
        raw = [(f.name, _PF[t], d) for f in (spec.fields if spec else ()) if attrs.get(f.name) is not None
               for d, t in [field_array(spec, f, attrs[f.name])]]
        return self.create(name, raw)

    def gpu_problem(self, name: str | None = None, cc: tuple[int, int] = (0, 0), has_image: bool = True) -> str:
        """Why this build refuses a GPU ('' if it does not): a described one, or the current device (name=None)."""
        buf = ctypes.create_string_buffer(512)
        if name is None:
            self.lib.th_current_gpu_problem(buf, len(buf))
        else:
            self.lib.th_gpu_problem(name.encode(), cc[0], cc[1], int(has_image), buf, len(buf))
        return buf.value.decode()

    @property
    def architectures(self) -> str:
        return self.lib.th_built_architectures().decode()

    def deserialize(self, name: str, blob: bytes) -> "Plugin | None":
        ptr = self.lib.th_deserialize(name.encode(), self.api, blob, len(blob))
        return Plugin(self, name, ptr) if ptr else None


class Plugin:
    def __init__(self, h: Harness, name: str, ptr: int):
        self.h, self.lib, self.name, self.ptr = h, h.lib, name, ptr

    def __del__(self):
        if getattr(self, "ptr", None):
            self.lib.th_destroy(self.ptr)
            self.ptr = None

    @property
    def nb_outputs(self) -> int:
        return self.lib.th_nb_outputs(self.ptr)

    def serialize(self) -> bytes:
        n = self.lib.th_serialize(self.ptr, None, 0)
        buf = ctypes.create_string_buffer(n)
        assert self.lib.th_serialize(self.ptr, buf, n) == n
        return buf.raw

    def clone(self) -> "Plugin":
        return Plugin(self.h, self.name, self.lib.th_clone(self.ptr))

    def attach(self) -> "Plugin":
        """The per-execution-context plugin: V3 attachToContext, V2 clone."""
        return Plugin(self.h, self.name, self.lib.th_attach(self.ptr))

    @property
    def api(self) -> int:
        return self.lib.th_api(self.ptr)

    @property
    def version(self) -> str:
        return self.lib.th_version(self.ptr).decode()

    def output_type(self, index: int, in_types: list[int]) -> int:
        return self.lib.th_output_type(self.ptr, index, _ints(in_types), len(in_types))

    def output_dims(self, index: int, in_shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
        out = (ctypes.c_int64 * 9)()
        n = self.lib.th_output_dims(self.ptr, index, len(in_shapes), _dims(in_shapes), out)
        return None if n < 0 else tuple(out[1 : 1 + n])

    def supports(self, pos: int, types: list[int], nb_inputs: int, formats: list[int] | None = None,
                 shapes: list[tuple[int, ...]] | None = None) -> bool:
        """shapes: every tensor's (build-time) dims; None: rank 0."""
        formats = formats or [LINEAR] * len(types)
        return bool(self.lib.th_supports(self.ptr, pos, nb_inputs, len(types) - nb_inputs, _ints(types), _ints(formats),
                                         None if shapes is None else _dims(shapes)))

    def set_formats(self, formats: list[int]) -> None:
        """The TensorFormat of every input then output in the following configure / enqueue calls."""
        self.lib.th_set_formats(self.ptr, _ints(formats), len(formats))

    def configure(self, types: list[int], shapes: list[tuple[int, ...]], nb_inputs: int) -> int:
        """Build time (-1 dims allowed); returns the V3 status (V2 returns nothing: 0)."""
        return self.lib.th_configure(self.ptr, nb_inputs, len(types) - nb_inputs, _ints(types), _dims(shapes))

    def shape_change(self, types: list[int], shapes: list[tuple[int, ...]], nb_inputs: int) -> int:
        """Run time: V3 onShapeChange (V2: configurePlugin with the real dims)."""
        return self.lib.th_shape_change(self.ptr, nb_inputs, len(types) - nb_inputs, _ints(types), _dims(shapes))

    def workspace(self, types: list[int], shapes: list[tuple[int, ...]], nb_inputs: int) -> int:
        return self.lib.th_workspace(self.ptr, nb_inputs, len(types) - nb_inputs, _ints(types), _dims(shapes))

    def initialize(self) -> int:
        return self.lib.th_initialize(self.ptr)

    def _io(self, types, shapes, inputs, outputs):
        ins = (ctypes.c_void_p * len(inputs))(*inputs)
        outs = (ctypes.c_void_p * len(outputs))(*outputs)
        return self.ptr, len(inputs), len(outputs), _ints(types), _dims(shapes), ins, outs

    def enqueue(self, types, shapes, inputs: list[int], outputs: list[int], stream: int = 0, workspace: int = 0) -> int:
        """types/shapes: inputs then outputs; inputs/outputs/workspace: device pointers."""
        return self.lib.th_enqueue(*self._io(types, shapes, inputs, outputs), workspace or None, stream)

    def enqueue_host_us(self, types, shapes, inputs, outputs, stream: int = 0, workspace: int = 0,
                        iters: int = 200, reps: int = 5) -> float:
        """Host microseconds per enqueue (median of reps loops of iters enqueues, no GPU wait); -1 on an error."""
        return self.lib.th_enqueue_host_us(*self._io(types, shapes, inputs, outputs), workspace or None, stream,
                                           iters, reps)
