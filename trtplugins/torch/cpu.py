"""The ops in torch on any device: the math of the op modules' references
(trtplugins.ops.<op>.reference; FP32 here, as the kernels accumulate), the CPU implementation of
the custom ops. Shapes are checked by the caller."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .. import ops

#: every activation of the op spec, by name (a test checks this covers the spec's choices)
ACTIVATIONS = {
    "identity": lambda x: x,
    "none": lambda x: x,  # GroupNorm's name for no activation
    "relu": F.relu,
    "relu6": F.relu6,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
    "quick_gelu": lambda x: x * torch.sigmoid(1.702 * x),
    "hard_swish": F.hardswish,
}
assert set(ops.ACTIVATIONS) | set(ops.GATED_ACTIVATIONS) | set(ops.GROUP_NORM_ACTIVATIONS) <= set(ACTIVATIONS)


def _f32(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.float32, copy=True)  # never x itself: no output may alias an input


def _out(y: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return y.to(like.dtype).contiguous()


def skip_norm(x, skip=None, *, norm, epsilon, gamma, beta=None, bias=None, output_sum=0):
    s = _f32(x)
    if skip is not None:
        s = s + skip.float()  # like x, or broadcast over x's leading dims (checked by the caller)
    if bias is not None:
        s = s + bias.float().reshape(-1)
    if norm == "layer":
        c = s - s.mean(-1, keepdim=True)
        y = c * torch.rsqrt(c.square().mean(-1, keepdim=True) + epsilon)
    else:
        y = s * torch.rsqrt(s.square().mean(-1, keepdim=True) + epsilon)
    y = y * gamma.float().reshape(-1)
    if beta is not None:
        y = y + beta.float().reshape(-1)
    return [_out(y, x), _out(s, x)] if output_sum else [_out(y, x)]


def group_norm(x, skip=None, *, num_groups, epsilon, gamma, beta=None, bias=None, activation, output_sum=0):
    n, c = x.shape[:2]
    chan = (1, c) + (1,) * (x.dim() - 2)
    s = _f32(x)
    if bias is not None:
        s = s + bias.float().reshape(chan)
    if skip is not None:
        s = s + skip.float()
    g = s.reshape(n, num_groups, -1)
    centred = g - g.mean(-1, keepdim=True)
    y = (centred * torch.rsqrt(centred.square().mean(-1, keepdim=True) + epsilon)).reshape(x.shape)
    y = y * gamma.float().reshape(chan)
    if beta is not None:
        y = y + beta.float().reshape(chan)
    y = ACTIVATIONS[activation](y)
    return [_out(y, x), _out(s, x)] if output_sum else [_out(y, x)]


def bias_activation(x, *, activation, bias=None):
    s = _f32(x) if bias is None else x.float() + bias.float().reshape(-1)
    return _out(ACTIVATIONS[activation](s), x)


def gated_activation(x, x2=None, *, activation, gate, gate_bias=None, linear_bias=None):
    first, second = x.float().chunk(2, -1) if x2 is None else (x.float(), x2.float())
    g, lin = (first, second) if gate == "first" else (second, first)
    if gate_bias is not None:
        g = g + gate_bias.float().reshape(-1)
    if linear_bias is not None:
        lin = lin + linear_bias.float().reshape(-1)
    return _out(ACTIVATIONS[activation](g) * lin, x)
