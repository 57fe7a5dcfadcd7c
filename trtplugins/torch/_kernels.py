"""The one place the torch ops reach the CUDA kernels: one function per op, taking torch CUDA
tensors and the op's fields, returning the outputs (launched on the current stream, no
synchronization), through each op module's kernel binding (trtplugins.ops.<op>.kernel).

The kernels read FP32 weights (and, for 16-bit I/O, optional exact 16-bit copies). What a weight gives
them (its checked size, its FP32 copy and the pointers) is derived once and kept while the weight lives
and is unchanged (the same tensor object, version counter and storage), so a model in FP16 pays no
conversion or check per call; under CUDA-graph capture a missing copy is converted inside the graph and
not kept. The copies, the GroupNorm workspace and the outputs come from torch's caching allocator.
"""

from __future__ import annotations

import weakref

import torch

from .. import kernels
from ..ops import bias_activation as _bias_activation
from ..ops import gated_activation as _gated_activation
from ..ops import group_norm as _group_norm
from ..ops import skip_norm as _skip_norm

class _Weight:
    """A weight as the kernels take it: its FP32 copy (None where the weight is FP32 and contiguous: no
    reference to the weight itself, so the cache never keeps one alive) and the pointer of the FP32
    values; io: the weight's own pointer where it can serve as an exact 16-bit copy (16-bit, contiguous,
    16-byte aligned; for I/O of its dtype only), else 0."""

    __slots__ = ("ref", "version", "ptr", "dtype", "size", "w32", "p32", "io")


_weights: dict = {}  # id(weight) -> its _Weight, while the weight lives


def _weight(w: torch.Tensor | None, x: torch.Tensor, size: int | None = None, name: str = "weight") -> _Weight | None:
    """w's _Weight (size: the values it must hold, checked where given)."""
    if w is None:
        return None
    key = id(w)
    hit = _weights.get(key)
    if hit is not None and hit.ref() is w and hit.version == w._version and hit.ptr == w.data_ptr() and (
            size is None or hit.size == size):
        return hit
    if w.device != x.device:
        raise ValueError(f"weights must be on x's device {x.device}; got {w.device}")
    r = _Weight()
    w32 = w if w.dtype == torch.float32 and w.is_contiguous() else w.float().contiguous()
    r.w32 = None if w32 is w else w32
    r.dtype, r.size, r.p32 = w.dtype, w.numel(), kernels.weight(w32, name, w.numel() if size is None else size)
    r.io = w.data_ptr() if w.element_size() == 2 and w.is_contiguous() and w.data_ptr() % 16 == 0 else 0
    # An inference tensor has no version counter to tell a change by (converted per call); a copy made
    # under capture lives in the graph's pool.
    if not w.is_inference() and not torch.cuda.is_current_stream_capturing():
        r.ref, r.version, r.ptr = weakref.ref(w, lambda _, key=key: _weights.pop(key, None)), w._version, w.data_ptr()
        _weights[key] = r
    return r


def _weight32(w: torch.Tensor | None, x: torch.Tensor, rec: _Weight | None = None) -> torch.Tensor | None:
    """w's FP32 values as a tensor (rec: w's _Weight where already looked up)."""
    if w is None:
        return None
    w32 = (rec or _weight(w, x)).w32
    return w if w32 is None else w32


def _io_ptrs(g: _Weight, b: _Weight | None, x: torch.Tensor) -> tuple[int, int]:
    """The pointers of gamma/beta as the kernels' exact 16-bit copies (half the weight bytes) when both
    already are x's 16-bit dtype, contiguous and 16-byte aligned, else (0, 0)."""
    if g.dtype == x.dtype and g.io and (b is None or (b.dtype == x.dtype and b.io)):
        return g.io, 0 if b is None else b.io
    return 0, 0


def skip_norm(x, skip, *, gamma, beta, bias, norm, epsilon, output_sum) -> list[torch.Tensor]:
    x = x.contiguous()
    skip = None if skip is None else skip.contiguous()
    g, b = _weight(gamma, x), _weight(beta, x)
    io = _io_ptrs(g, b, x)[0]
    gamma_io, beta_io = (gamma, beta) if io else (None, None)
    out = _skip_norm.kernel(x, skip, gamma=_weight32(gamma, x, g), beta=_weight32(beta, x, b), bias=_weight32(bias, x),
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

_prepared: dict = {}  # signature -> launch(x, skip or x2, *weights) -> outputs, or None (none here)
_MAX_PREPARED = 4096


def _fields(spec_name: str) -> dict:
    from .. import ops

    return {f.name: f.default for f in ops.spec(spec_name).fields}


_GN = _fields("GroupNorm")
_SN = _fields("SkipNorm")
_GA = _fields("GatedActivation")


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
    index = x.device.index
    choice = _group_norm._choice(index, dtype, n, c, spatial, num_groups, mode, activation)
    run = _group_norm.chosen_launcher(dtype, mode, n, c, spatial, num_groups, float(epsilon), activation, choice)

    def launch(x, skip, gamma, beta, bias):
        x, skip = x.contiguous(), None if skip is None else skip.contiguous()
        g, b, bi = _weight(gamma, x, c, "gamma"), _weight(beta, x, c, "beta"), _weight(bias, x, c, "bias")
        y = torch.empty_like(x)
        s = torch.empty_like(x) if output_sum else None
        ws = torch.empty(size, dtype=torch.uint8, device=x.device)
        code = run(x.data_ptr(), _ptr(skip), _p32(bi), g.p32, _p32(b), y.data_ptr(), _ptr(s), ws.data_ptr(), size,
                   kernels.current_stream(index))
        if code:
            kernels.check(code, "group_norm")
        return [y, s] if output_sum else [y]
    launch.entry = run  # the C entry's call alone (benchmarks/bench_torch_overhead.py times it)
    return launch


def _skip_norm_launch(x, skip, norm, epsilon, output_sum, io):
    """SkipNorm's launch for x and a skip shaped like x, made contiguous as above (None: not this path)."""
    if skip is not None and skip.shape != x.shape:
        return None
    hidden = x.shape[-1]
    rows = x.numel() // hidden if hidden else 0
    dtype = kernels.dtype_name(x)

    index, run = x.device.index, _skip_norm.launcher(dtype, rows, hidden, float(epsilon), norm)

    def launch(x, skip, gamma, beta, bias):
        x, skip = x.contiguous(), None if skip is None else skip.contiguous()
        g, b, bi = (_weight(gamma, x, hidden, "gamma"), _weight(beta, x, hidden, "beta"),
                    _weight(bias, x, hidden, "bias"))
        gamma_io, beta_io = _io_ptrs(g, b, x) if io else (0, 0)
        y = torch.empty_like(x)
        s = torch.empty_like(x) if output_sum else None
        code = run(x.data_ptr(), _ptr(skip), _p32(bi), g.p32, _p32(b), y.data_ptr(), _ptr(s),
                   kernels.current_stream(index), gamma_io, beta_io)
        if code:
            kernels.check(code, "skip_norm")
        return [y, s] if output_sum else [y]
    launch.entry = run
    return launch


def _gated_launch(x, x2, activation, gate):
    """GatedActivation's launch for x (and x2 shaped like x), made contiguous (None: not this path)."""
    last = x.shape[-1] if x.dim() else 0
    if not last or (x2 is None and last % 2) or (x2 is not None and x2.shape != x.shape):
        return None
    width = last if x2 is not None else last // 2
    shape = (*x.shape[:-1], width)
    index = x.device.index
    run = _gated_activation.launcher(kernels.dtype_name(x), x.numel() // last, width, activation, gate)

    def launch(x, x2, gate_bias, linear_bias):
        x, x2 = x.contiguous(), None if x2 is None else x2.contiguous()
        gb, lb = _weight(gate_bias, x, width, "gate_bias"), _weight(linear_bias, x, width, "linear_bias")
        y = torch.empty(shape, dtype=x.dtype, device=x.device)
        code = run(x.data_ptr(), _ptr(x2), _p32(gb), _p32(lb), y.data_ptr(), kernels.current_stream(index))
        if code:
            kernels.check(code, "gated_activation")
        return y
    return launch


def _ptr(t) -> int:
    return 0 if t is None else t.data_ptr()


def _p32(w: _Weight | None) -> int:
    return 0 if w is None else w.p32


def eager(name: str, args: tuple, kwargs: dict, checked) -> list:
    """An eager CUDA call of op `name`: through its signature's prepared launch, or `checked` (the
    implementation that checks everything) on the signature's first call and where none applies."""
    x, skip = args[0], args[1] if len(args) > 1 else kwargs.get("x2" if name == "gated_activation" else "skip")
    second = None if skip is None else (skip.shape, skip.stride())
    signature = (name, x.shape, x.stride(), x.dtype, x.get_device(), second)
    if name == "group_norm":
        f = {**_GN, **kwargs}
        key = signature + (f["num_groups"], f["activation"], f["epsilon"], f["output_sum"])
        make = lambda: _group_norm_launch(x, skip, f["num_groups"], f["activation"], f["epsilon"],  # noqa: E731
                                          f["output_sum"])
        weights, ready = (f["gamma"], f["beta"], f["bias"]), f["gamma"] is not None  # the launch needs gamma
    elif name == "skip_norm":
        f = {**_SN, **kwargs}
        g, b = f["gamma"], f["beta"]
        io = g is not None and g.dtype == x.dtype and (b is None or b.dtype == x.dtype)
        key = signature + (f["norm"], f["epsilon"], f["output_sum"], io)
        make = lambda: _skip_norm_launch(x, skip, f["norm"], f["epsilon"], f["output_sum"], io)  # noqa: E731
        weights, ready = (g, b, f["bias"]), g is not None
    elif name == "gated_activation":
        f = {**_GA, **kwargs}
        key = signature + (f["activation"], f["gate"])
        make = lambda: _gated_launch(x, skip, f["activation"], f["gate"])  # noqa: E731
        weights, ready = (f["gate_bias"], f["linear_bias"]), True
    else:
        return checked(*args, **kwargs)
    launch = _prepared.get(key, False)
    if launch is False:  # the signature's first call: checked, then prepared
        out = checked(*args, **kwargs)
        if len(_prepared) >= _MAX_PREPARED:
            _prepared.clear()
        _prepared[key] = make()
        return out
    if launch is None or not ready or x.get_device() != torch.cuda.current_device():  # launches: the current GPU
        return checked(*args, **kwargs)
    return launch(x, skip, *weights)
