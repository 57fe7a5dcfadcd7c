"""The one place the torch ops reach the CUDA kernels: one function per op, taking torch CUDA
tensors and the op's fields, returning the outputs (launched on the current stream, no
synchronization), through each op module's kernel binding (trtplugins.ops.<op>.kernel).

The kernels read FP32 weights (and, for 16-bit I/O, optional exact 16-bit copies). A weight in
another dtype is converted once and the FP32 copy kept while the weight lives and is unchanged
(keyed by the tensor object and its version counter), so a model in FP16 pays no conversion per
call; under CUDA-graph capture a missing copy is converted inside the graph and not kept. The
copies, the GroupNorm workspace and the outputs come from torch's caching allocator.
"""

from __future__ import annotations

import weakref

import torch

from .. import kernels
from ..ops import bias_activation as _bias_activation
from ..ops import gated_activation as _gated_activation
from ..ops import group_norm as _group_norm
from ..ops import skip_norm as _skip_norm

_fp32: dict = {}  # id(weight) -> (a weak reference to it, its _version, its FP32 copy), while it lives


def _weight32(w: torch.Tensor | None, x: torch.Tensor) -> torch.Tensor | None:
    if w is None:
        return None
    if w.device != x.device:
        raise ValueError(f"weights must be on x's device {x.device}; got {w.device}")
    if w.dtype == torch.float32:
        return w.contiguous()
    if w.is_inference():  # no version counter to tell a change by: converted per call
        return w.float().contiguous()
    key = id(w)
    hit = _fp32.get(key)
    if hit is not None and hit[0]() is w and hit[1] == w._version:
        return hit[2]
    w32 = w.float().contiguous()
    if not torch.cuda.is_current_stream_capturing():
        _fp32[key] = (weakref.ref(w, lambda _, key=key: _fp32.pop(key, None)), w._version, w32)
    return w32


def _io(gamma: torch.Tensor, beta: torch.Tensor | None, x: torch.Tensor) -> tuple:
    """gamma/beta as the kernels' exact 16-bit copies (half the weight bytes) when they already are
    x's 16-bit dtype and 16-byte aligned, else (None, None)."""
    ws = [w for w in (gamma, beta) if w is not None]
    if x.element_size() == 2 and all(w.dtype == x.dtype and w.is_contiguous() and w.data_ptr() % 16 == 0 for w in ws):
        return gamma, beta
    return None, None


def skip_norm(x, skip, *, gamma, beta, bias, norm, epsilon, output_sum) -> list[torch.Tensor]:
    x = x.contiguous()
    skip = None if skip is None else skip.contiguous()
    gamma_io, beta_io = _io(gamma, beta, x)
    out = _skip_norm.kernel(x, skip, gamma=_weight32(gamma, x), beta=_weight32(beta, x), bias=_weight32(bias, x),
                            norm=norm, epsilon=epsilon, output_sum=bool(output_sum), gamma_io=gamma_io,
                            beta_io=beta_io)
    return list(out) if output_sum else [out]


def group_norm(x, skip, *, num_groups, gamma, beta, bias, activation, epsilon, output_sum) -> list[torch.Tensor]:
    x = x.contiguous()
    skip = None if skip is None else skip.contiguous()
    out = _group_norm.kernel(x, skip, num_groups=num_groups, gamma=_weight32(gamma, x), beta=_weight32(beta, x),
                             bias=_weight32(bias, x), activation=activation, epsilon=epsilon,
                             output_sum=bool(output_sum))
    return list(out) if output_sum else [out]


def bias_activation(x, *, activation, bias) -> torch.Tensor:
    return _bias_activation.kernel(x.contiguous(), _weight32(bias, x), activation)


def gated_activation(x, x2, *, activation, gate, gate_bias, linear_bias) -> torch.Tensor:
    return _gated_activation.kernel(x.contiguous(), None if x2 is None else x2.contiguous(), activation=activation,
                                    gate=gate, gate_bias=_weight32(gate_bias, x), linear_bias=_weight32(linear_bias, x))


# --- eager calls: a launch prepared once per call signature -------------------------------------
# A call's Python work (argument checks, plans, sizes, ids) depends only on its signature: shapes,
# strides, dtype, device and field values. The first call of a signature goes the checked way above;
# the later ones reuse what it decided and only allocate the outputs and launch. Weights are read
# per call (their FP32 copies as above); their sizes are checked per call.

_prepared: dict = {}  # signature -> launch(x, skip, gamma, beta, bias) -> outputs, or None (none here)
_MAX_PREPARED = 4096


def _fields(spec_name: str) -> dict:
    from .. import ops

    return {f.name: f.default for f in ops.spec(spec_name).fields}


_GN = _fields("GroupNorm")
_SN = _fields("SkipNorm")


def _group_norm_launch(x, skip, num_groups, activation, epsilon, output_sum):
    """The plugin's design's launch (split, or resident where it picks that) for tensors shaped and laid
    out as x and skip, made contiguous as above (None: not this path)."""
    n, c = x.shape[0], x.shape[1]
    spatial = x.numel() // (n * c) if n * c else 0
    if not spatial:
        return None
    mode = "none" if skip is None else "full" if skip.shape == x.shape else "per_channel"
    dtype = kernels.dtype_name(x)
    size = _group_norm.workspace_size(n, num_groups)
    resident = _group_norm._resident_first(x.device.index, dtype, n, c, spatial, num_groups, mode, activation)
    plan = resident or _group_norm._device_plan(x.device.index, dtype, n, num_groups, c // num_groups * spatial, mode)

    def launch(x, skip, gamma, beta, bias):
        x, skip = x.contiguous(), None if skip is None else skip.contiguous()
        y = torch.empty_like(x)
        s = torch.empty_like(x) if output_sum else None
        ws = torch.empty(size, dtype=torch.uint8, device=x.device)
        args = (x.data_ptr(), _ptr(skip), mode, kernels.weight(bias, "bias", c), kernels.weight(gamma, "gamma", c),
                kernels.weight(beta, "beta", c), y.data_ptr(), _ptr(s), ws.data_ptr(), size, n, c, spatial, num_groups,
                float(epsilon), activation, kernels.stream_of(x))
        if resident:
            _group_norm.raw_resident(dtype, "channels_first", 0, *args, plan=plan)
        else:
            _group_norm.raw_kernel(dtype, *args, plan)
        return [y, s] if output_sum else [y]
    return launch


def _skip_norm_launch(x, skip, norm, epsilon, output_sum, io):
    """SkipNorm's launch for x and a skip shaped like x, made contiguous as above (None: not this path)."""
    if skip is not None and skip.shape != x.shape:
        return None
    hidden = x.shape[-1]
    rows = x.numel() // hidden if hidden else 0
    dtype = kernels.dtype_name(x)

    def launch(x, skip, gamma, beta, bias):
        x, skip = x.contiguous(), None if skip is None else skip.contiguous()
        gamma_io, beta_io = _io(gamma, beta, x) if io else (None, None)
        g32, b32 = _weight32(gamma, x), _weight32(beta, x)
        y = torch.empty_like(x)
        s = torch.empty_like(x) if output_sum else None
        _skip_norm.raw_kernel(dtype, x.data_ptr(), _ptr(skip), kernels.weight(_weight32(bias, x), "bias", hidden),
                              kernels.weight(g32, "gamma", hidden), kernels.weight(b32, "beta", hidden), y.data_ptr(),
                              _ptr(s), rows, hidden, float(epsilon), norm, kernels.stream_of(x),
                              gamma_io=_skip_norm.io_weight(gamma_io, g32, x), beta_io=_skip_norm.io_weight(beta_io, b32, x))
        return [y, s] if output_sum else [y]
    return launch


def _ptr(t) -> int:
    return 0 if t is None else t.data_ptr()


def eager(name: str, args: tuple, kwargs: dict, checked) -> list:
    """An eager CUDA call of op `name`: through its signature's prepared launch, or `checked` (the
    implementation that checks everything) on the signature's first call and where none applies."""
    x, skip = args[0], args[1] if len(args) > 1 else kwargs.get("skip")
    if name == "group_norm":
        f = {**_GN, **kwargs}
        key = (name, x.shape, x.stride(), x.dtype, x.device, None if skip is None else (skip.shape, skip.stride()),
               f["num_groups"], f["activation"], f["epsilon"], f["output_sum"])
        make = lambda: _group_norm_launch(x, skip, f["num_groups"], f["activation"], f["epsilon"],  # noqa: E731
                                          f["output_sum"])
        weights = (f["gamma"], f["beta"], f["bias"])
    elif name == "skip_norm":
        f = {**_SN, **kwargs}
        g, b = f["gamma"], f["beta"]
        io = g is not None and g.dtype == x.dtype and (b is None or b.dtype == x.dtype)
        key = (name, x.shape, x.stride(), x.dtype, x.device, None if skip is None else (skip.shape, skip.stride()),
               f["norm"], f["epsilon"], f["output_sum"], io)
        make = lambda: _skip_norm_launch(x, skip, f["norm"], f["epsilon"], f["output_sum"], io)  # noqa: E731
        weights = (g, b, f["bias"])
    else:
        return checked(*args, **kwargs)
    launch = _prepared.get(key, False)
    if launch is False:  # the signature's first call: checked, then prepared
        out = checked(*args, **kwargs)
        if len(_prepared) >= _MAX_PREPARED:
            _prepared.clear()
        _prepared[key] = make()
        return out
    if launch is None or weights[0] is None:
        return checked(*args, **kwargs)
    if name == "group_norm":
        return launch(x, skip, *(_weight32(w, x) for w in weights))
    return launch(x, skip, *weights)
