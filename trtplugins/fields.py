"""Python values -> PluginFieldCollection, typed by the op spec.

TensorRT's PluginField does not own its buffer: the arrays are kept alive
here until the creator has returned.
"""

from __future__ import annotations

import contextlib
import numbers
import os
import sys
import tempfile
from typing import Any

import numpy as np

from . import schema
from .loader import trt_module


def _bf16_dtype():
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


def field_array(spec: schema.OpSpec, f: schema.Field, value: Any) -> tuple[np.ndarray, str]:
    """(data array, PluginFieldType member name) for one field; TypeError/ValueError on bad values."""
    where = f"{spec.name}.{f.name}"
    if f.kind == "string":
        if not isinstance(value, str):
            raise TypeError(f"{where} must be a str, got {type(value).__name__}")
        if f.choices and value not in f.choices:
            raise ValueError(f"{where} = {value!r} is not one of {list(f.choices)}")
        return np.frombuffer(value.encode() + b"\0", dtype=np.int8).copy(), "CHAR"
    if f.kind == "float":
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{where} must be a float, got {type(value).__name__}")
        with np.errstate(over="ignore", under="ignore"):
            v32 = np.float32(value)
        if np.isfinite(value) and (not np.isfinite(v32) or (value != 0 and v32 == 0)):  # nan/inf: the creator says
            raise ValueError(f"{where} = {value!r} is not representable in float32 (it would become {v32})")
        return np.array([v32], dtype=np.float32), "FLOAT32"
    if f.kind == "int":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{where} must be an int, got {type(value).__name__}")
        if not np.iinfo(np.int32).min <= int(value) <= np.iinfo(np.int32).max:
            raise ValueError(f"{where} = {value} does not fit in int32")
        return np.array([int(value)], dtype=np.int32), "INT32"
    # weights
    arr = np.asarray(value)
    if arr.dtype not in (np.float32, np.float16, np.float64) and arr.dtype != _bf16_dtype():
        raise TypeError(f"{where} must be float32, float16 or bfloat16 weights, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{where} must be a non-empty 1-D array, got shape {arr.shape}")
    if arr.dtype == np.float16:
        return np.ascontiguousarray(arr), "FLOAT16"
    if arr.dtype == _bf16_dtype():  # the buffer protocol has no bfloat16: pass the bits
        return np.ascontiguousarray(arr).view(np.uint16), "BF16"
    return np.ascontiguousarray(arr, dtype=np.float32), "FLOAT32"


def field_collection(name: str, attrs: dict[str, Any], trt=None):
    """(PluginFieldCollection, arrays to keep alive) for `attrs` of plugin `name`."""
    trt = trt or trt_module()
    spec = schema.spec(name)
    known = {f.name for f in spec.fields}
    unknown = sorted(set(attrs) - known)
    if unknown:
        raise TypeError(f"{name}: unknown attribute(s) {unknown}; fields are {sorted(known)}")
    missing = [f.name for f in spec.fields if f.required and attrs.get(f.name) is None]
    if missing:
        raise ValueError(f"{name}: missing required attribute(s) {missing}")
    keep, fields = [], []
    for f in spec.fields:
        if attrs.get(f.name) is None:
            continue
        data, ftype = field_array(spec, f, attrs[f.name])
        keep.append(data)
        fields.append(trt.PluginField(f.name, data, getattr(trt.PluginFieldType, ftype)))
    return trt.PluginFieldCollection(fields), keep


def _interface(creator) -> str:
    """'v3' for an IPluginCreatorV3One, 'v2' for a V1 creator (IPluginCreator)."""
    info = getattr(creator, "interface_info", None)
    return "v3" if info is not None and "V3" in str(info.kind) else "v2"


def create_plugin(name: str, *, version: str = schema.VERSION, namespace: str = schema.NAMESPACE, registry=None,
                  phase: str = "build", **attrs):
    """Create a plugin of this suite from Python values (the library must be loaded).

    version: schema.V2_VERSION ("1", an IPluginV2) or schema.V3_VERSION ("2", an IPluginV3,
    created for TensorRTPhase `phase`: "build" or "runtime").
    Raises on unknown, missing or mistyped attributes, and when the creator
    rejects the values (its reason is in the TensorRT log).
    """
    schema.spec(name)  # unknown names fail here, with the list of known ones
    trt = trt_module()
    registry = registry if registry is not None else trt.get_plugin_registry()
    creator = registry.get_creator(name, version, namespace)
    if creator is None:
        raise LookupError(
            f"no creator {name!r} version {version!r} namespace {namespace!r} registered: call trtplugins.load() first"
        )
    collection, keep = field_collection(name, attrs, trt)
    with _stderr_captured() as said:
        if _interface(creator) == "v3":
            plugin = creator.create_plugin(name, collection, getattr(trt.TensorRTPhase, phase.upper()))
        else:
            plugin = creator.create_plugin(name, collection)
    del keep  # safe only now: the creator has copied the data
    if plugin is None:
        reason = said().strip().replace("[trtplugins] ", "") or "reason in the TensorRT log"
        raise ValueError(f"{name}: the creator rejected the attributes: {reason}")
    return plugin


def add_plugin(network, name: str, inputs, *, api: str = "v3", registry=None, **attrs):
    """Add a plugin layer of this suite to a network built with TensorRT's Python API.

    api "v3": IPluginV3 through `add_plugin_v3` (TensorRT 10+, TensorRT-RTX); "v2":
    IPluginV2 through `add_plugin_v2`. Returns the layer; its outputs follow the op spec
    (`schema.spec(name).num_outputs(attrs)`).
    """
    if api not in schema.VERSIONS:
        raise ValueError(f"api must be one of {sorted(schema.VERSIONS)}, got {api!r}")
    spec = schema.spec(name)
    inputs = list(inputs)
    if not spec.min_inputs <= len(inputs) <= spec.max_inputs:
        raise ValueError(f"{name} takes {spec.min_inputs}..{spec.max_inputs} inputs, got {len(inputs)}")
    plugin = create_plugin(name, version=schema.VERSIONS[api], registry=registry, **attrs)
    layer = network.add_plugin_v3(inputs, [], plugin) if api == "v3" else network.add_plugin_v2(inputs, plugin)
    if layer is None:
        raise ValueError(f"{name}: the network refused the plugin layer (see the TensorRT log)")
    return layer


@contextlib.contextmanager
def _stderr_captured():
    """Capture what native code writes to fd 2 (the library logs there when TensorRT
    gives it no logger), pass it on to stderr, and yield a getter for it."""
    text = ""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield lambda: text
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode(errors="replace")
            sys.stderr.write(text)
