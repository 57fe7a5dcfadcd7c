"""Drop-in modules: nn.LayerNorm, RMSNorm and nn.GroupNorm (+ SiLU) as one fused kernel each, and a
projection whose halves gate each other (diffusers' GEGLU, SwiGLU) as the projection and one kernel.

Same constructor arguments, parameter names and state_dict as the modules they replace;
from_module(m) shares m's parameters (no copy: tied weights and the state_dict stay as they
were). Inference only: a call that needs a gradient raises (see library.py).

Under torch.compile (not an export) a module runs torch's own ops by default (`under_compile` "torch"):
Inductor then fuses the norm into its neighbours' kernels and keeps its layouts, where our op is an
opaque call with a host cost per call (benchmarks/RESULTS.md, PyTorch: a compiled SD UNet 0.56x with our
op, a LLaMA stack 0.99x); "trtplugins" keeps our kernel in compiled graphs. Eager, CUDA graphs of eager
code and exports (torch.export, torch.onnx) always call the op, or in eager on CUDA, after
trtplugins.torch.use_cpp(), its C++ launches (_cpp.py: the same kernels, no Python of ours per call)."""

from __future__ import annotations

import operator

import torch
from torch import nn

from torch.nn import functional as F

from ..ops import GATED_ACTIVATIONS
from ..ops.gated_activation import ACTIVATION_IDS as GATED_IDS, GATE_IDS
from ..ops.group_norm import ACTIVATION_IDS as GN_ACTIVATION_IDS, skip_fits as group_norm_fits
from ..ops.skip_norm import NORM_IDS, skip_fits as skip_norm_fits
from . import _cpp
from .cpu import ACTIVATIONS
from .library import gated_activation, group_norm, skip_norm

UNDER_COMPILE = ("torch", "trtplugins")
IO_DTYPES = (torch.float32, torch.float16, torch.bfloat16)  # the ops' I/O types


def _exporting() -> bool:
    """Whether torch.export traces this call: the flag it sets (torch.compiler.is_exporting() reads True
    under every dynamo trace before torch 2.14, pytorch/pytorch#176347)."""
    flag = getattr(torch.compiler, "_is_exporting_flag", None)
    return torch.compiler.is_exporting() if flag is None else flag


def _compiled(m: nn.Module) -> bool:
    """Whether m runs torch's ops here: traced by torch.compile (not exporting) and asked to."""
    return m.under_compile == "torch" and torch.compiler.is_compiling() and not _exporting()


def _takes(x, skip, fits) -> bool:
    """Whether the op takes skip beside x: tensors of one dtype and device, skip's shape as fits allows."""
    return (isinstance(x, torch.Tensor) and isinstance(skip, torch.Tensor) and skip.dtype == x.dtype
            and skip.device == x.device and fits(x.shape, skip.shape))


def _fast(x):
    """The C++ launches (trtplugins.torch.use_cpp()) where this call may take them: a plain tensor, nothing
    compiling, tracing or exporting (those see the op); else None."""
    ext = _cpp.ext
    if ext is None or type(x) is not torch.Tensor or torch.compiler.is_compiling() or torch.jit.is_tracing():
        return None
    return ext


def _gated(x, x2, activation: str, gate: str):
    """GatedActivation through the C++ launches where they take the call, else the op."""
    ext = _fast(x)
    out = None if ext is None else ext.gated_activation(x, x2, None, None, GATED_IDS[activation], GATE_IDS[gate])
    return gated_activation(x, x2, activation=activation, gate=gate) if out is None else out


def _last_dim(normalized_shape) -> int:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if len(shape) != 1:
        raise ValueError(f"normalized_shape {shape}: the fused norms normalize the last dim only")
    return int(shape[0])


class _Affine(nn.Module):
    under_compile = "torch"  # or "trtplugins": see the module doc

    def _params(self, size: int, weight: bool, bias: bool, device, dtype) -> None:
        kw = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.ones(size, **kw)) if weight else None
        self.bias = nn.Parameter(torch.zeros(size, **kw)) if weight and bias else None

    def _gamma(self, x: torch.Tensor, size: int) -> torch.Tensor:
        w = self.weight  # one lookup: a parameter's costs a Module.__getattr__
        return w if w is not None else x.new_ones(size)  # no affine: ones per call

    def _share(self, m: nn.Module) -> None:
        self.weight, self.bias = m.weight, getattr(m, "bias", None)

    def _norm(self, x, skip, output_sum: bool, norm: str, eps: float):
        """norm(x + skip) as one SkipNorm kernel (torch's ops where compiled: _torch_norm); with output_sum,
        (that, x + skip). A skip the op cannot take is added first."""
        if skip is not None and not _takes(x, skip, skip_norm_fits):
            x, skip = x + skip, None
        if _compiled(self):
            s = x if skip is None else x + skip
            return (self._torch_norm(s, eps), s) if output_sum else self._torch_norm(s, eps)
        gamma, summed = self._gamma(x, self.normalized_shape[0]), bool(output_sum and skip is not None)
        ext, out = _fast(x), None
        if ext is not None:
            out = ext.skip_norm(x, skip, gamma, self.bias, None, NORM_IDS[norm], eps, summed)
        if out is None:
            out = skip_norm(x, skip, gamma=gamma, beta=self.bias, norm=norm, epsilon=eps, output_sum=int(summed))
        return (out, x) if output_sum and skip is None else out


class FusedLayerNorm(_Affine):
    """nn.LayerNorm over the last dim: one SkipNorm kernel (norm "layer"). forward(x, skip=None,
    output_sum=False): a call site may normalize x + skip in the same kernel (fuse() rewrites
    `self.norm(a + b)` and the residual stream's `h = r + h; r = h; h = self.norm(h)`) and take the sum
    as well: (y, x + skip) with output_sum."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape = (_last_dim(normalized_shape),)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self._params(self.normalized_shape[0], elementwise_affine, bias, device, dtype)

    @classmethod
    def from_module(cls, m: nn.LayerNorm) -> FusedLayerNorm:
        new = cls(m.normalized_shape, m.eps, m.elementwise_affine, m.bias is not None, device="meta")
        new._share(m)
        return new

    def forward(self, x: torch.Tensor, skip=None, output_sum: bool = False):
        return self._norm(x, skip, output_sum, "layer", self.eps)

    def _torch_norm(self, s: torch.Tensor, eps: float) -> torch.Tensor:
        return F.layer_norm(s, self.normalized_shape, self.weight, self.bias, eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class FusedRMSNorm(_Affine):
    """RMSNorm over the last dim, y = x / sqrt(mean(x^2) + eps) * weight (nn.RMSNorm, and the
    LLaMA/Mistral/Qwen2/T5 modules): one SkipNorm kernel (norm "rms"). eps None: the input
    dtype's machine epsilon, as nn.RMSNorm. forward(x, skip=None, output_sum=False) as FusedLayerNorm's."""

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape = (_last_dim(normalized_shape),)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self._params(self.normalized_shape[0], elementwise_affine, False, device, dtype)

    @classmethod
    def from_module(cls, m: nn.Module, eps: float | None = None) -> FusedRMSNorm:
        """m: nn.RMSNorm, or a module with a 1-D `weight` computing RMSNorm with epsilon eps."""
        size = m.weight.shape[0] if m.weight is not None else m.normalized_shape
        new = cls(size, getattr(m, "eps", None) if eps is None else eps, m.weight is not None, device="meta")
        new._share(m)
        return new

    def forward(self, x: torch.Tensor, skip=None, output_sum: bool = False):
        eps = torch.finfo(x.dtype).eps if self.eps is None else self.eps
        return self._norm(x, skip, output_sum, "rms", eps)

    def _torch_norm(self, s: torch.Tensor, eps: float) -> torch.Tensor:
        return F.rms_norm(s, self.normalized_shape, self.weight, eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class FusedGroupNorm(_Affine):
    """nn.GroupNorm, optionally followed by SiLU (activation "silu"): one GroupNorm kernel.
    forward(x, activation=None, skip=None, output_sum=False): a call site may ask for another activation than
    the module's (fuse() rewrites `h = self.norm(h); h = self.silu(h)` into `h = self.norm(h,
    activation="silu")`) and normalize x + skip (fuse() rewrites `h = h + t; h = self.norm(h)` into
    `h = self.norm(h, skip=t)`); a skip the op cannot take (not x's shape or [N, C, 1, ...], another
    dtype or device) is added first, as the code it replaces did. With output_sum: (y, x + skip)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 activation: str = "none", device=None, dtype=None):
        super().__init__()
        if num_groups < 1 or num_channels % num_groups:
            raise ValueError(f"num_groups {num_groups} does not divide num_channels {num_channels}")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self.activation = activation
        self._params(num_channels, affine, True, device, dtype)

    @classmethod
    def from_module(cls, m: nn.GroupNorm, activation: str = "none") -> FusedGroupNorm:
        new = cls(m.num_groups, m.num_channels, m.eps, m.affine, activation, device="meta")
        new._share(m)
        return new

    def forward(self, x: torch.Tensor, activation: str | None = None, skip=None, output_sum: bool = False):
        act = self.activation if activation is None else activation
        if skip is not None and not (_takes(x, skip, group_norm_fits) and x.dim() > 2):
            x, skip = x + skip, None
        if _compiled(self) and act in ("none", "silu"):  # any other: the op's own error
            s = x if skip is None else x + skip
            y = F.group_norm(s, self.num_groups, self.weight, self.bias, self.eps)
            y = F.silu(y) if act == "silu" else y
            return (y, s) if output_sum else y
        flat, summed = x.dim() == 2, bool(output_sum and skip is not None)  # nn.GroupNorm takes (N, C) too
        xs, gamma = x.unsqueeze(-1) if flat else x, self._gamma(x, self.num_channels)
        ext, out, act_id = _fast(x), None, GN_ACTIVATION_IDS.get(act)
        if ext is not None and act_id is not None:
            out = ext.group_norm(xs, skip, self.num_groups, gamma, self.bias, None, act_id, self.eps, summed)
        if out is None:
            out = group_norm(xs, skip, num_groups=self.num_groups, epsilon=self.eps, gamma=gamma, beta=self.bias,
                             activation=act, output_sum=int(summed))
        y = out[0] if summed else out
        y = y.squeeze(-1) if flat else y
        return (y, x if skip is None else out[1]) if output_sum else y

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"activation={self.activation!r}")


class FusedGatedLinear(nn.Module):
    """A projection whose output's two halves gate each other: (a, g) = proj(x).chunk(2, -1), y = a *
    act(g) (gate "second": diffusers' GEGLU and SwiGLU), or g's roles swapped (gate "first"). The
    projection (the nn.Linear, shared) then one GatedActivation kernel in place of the chunk, the
    activation and the product."""

    under_compile = "torch"  # or "trtplugins": see the module doc

    def __init__(self, proj: nn.Linear, activation: str, gate: str = "second"):
        super().__init__()
        if activation not in GATED_ACTIVATIONS or gate not in ("first", "second"):
            raise ValueError(f"activation {activation!r}, gate {gate!r}: expected one of "
                             f"{', '.join(GATED_ACTIVATIONS)} and first or second")
        if proj.out_features % 2:
            raise ValueError(f"proj has {proj.out_features} outputs: an odd count has no two halves")
        self.proj, self.activation, self.gate = proj, activation, gate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)
        if _compiled(self):
            first, second = h.chunk(2, -1)
            a, g = (first, second) if self.gate == "second" else (second, first)
            return a * ACTIVATIONS[self.activation](g)
        return _gated(h, None, self.activation, self.gate)

    def extra_repr(self) -> str:
        return f"activation={self.activation!r}, gate={self.gate!r}"


class FusedActivation(nn.Module):
    """An activation module (kept, as `act`) whose product with another tensor runs as one kernel:
    forward(x) is act(x); forward(x, gated=y) is act(x) * y, one GatedActivation kernel (fuse() rewrites
    `self.act(a) * b` into `self.act(a, gated=b)`: HF LLaMA/Mistral/Qwen2 MLPs). A y the op cannot take
    (not x's shape, dtype and device; a dtype other than FP32, FP16, BF16) is multiplied after, as the code
    it replaces did."""

    under_compile = "torch"  # or "trtplugins": see the module doc

    def __init__(self, act: nn.Module, activation: str):
        super().__init__()
        if activation not in GATED_ACTIVATIONS:
            raise ValueError(f"activation {activation!r}: expected one of {', '.join(GATED_ACTIVATIONS)}")
        self.act, self.activation = act, activation

    def forward(self, x: torch.Tensor, gated=None) -> torch.Tensor:
        if gated is None:
            return self.act(x)
        if _compiled(self) or not (_takes(x, gated, operator.eq) and x.dtype in IO_DTYPES):
            return self.act(x) * gated
        return _gated(x, gated, self.activation, "first")

    def extra_repr(self) -> str:
        return f"activation={self.activation!r}"
