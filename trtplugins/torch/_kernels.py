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

import torch
from torch.utils.weak import WeakTensorKeyDictionary

from ..ops import bias_activation as _bias_activation
from ..ops import gated_activation as _gated_activation
from ..ops import group_norm as _group_norm
from ..ops import skip_norm as _skip_norm

_fp32 = WeakTensorKeyDictionary()  # weight -> (its _version, FP32 copy)


def _weight32(w: torch.Tensor | None, x: torch.Tensor) -> torch.Tensor | None:
    if w is None:
        return None
    if w.device != x.device:
        raise ValueError(f"weights must be on x's device {x.device}; got {w.device}")
    if w.dtype == torch.float32:
        return w.contiguous()
    hit = _fp32.get(w)
    if hit is not None and hit[0] == w._version:
        return hit[1]
    w32 = w.float().contiguous()
    if not torch.cuda.is_current_stream_capturing():
        _fp32[w] = (w._version, w32)
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
