"""NumPy reference of every fused op: the single source of truth for numerics.

Math runs in float64 on the given inputs and the result is cast once to the
input dtype (float32, float16 or ml_dtypes.bfloat16 where installed). The
kernels accumulate in FP32 without rounding intermediates to the I/O type, so
this is the exact function they approximate.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from . import ops

_erfc = np.frompyfunc(math.erfc, 1, 1)
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp(-|x|) neither overflows nor cancels: 0.5 (1 + tanh(x / 2)) was 0 below x ~ -38
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0, e) / (1.0 + e)


def activation(name: str, x: np.ndarray) -> np.ndarray:
    """Apply an activation to a float64 array."""
    if name == "identity":
        return x
    if name == "relu":
        return np.maximum(x, 0.0)
    if name == "relu6":
        return np.clip(x, 0.0, 6.0)
    if name == "gelu":
        return 0.5 * x * _erfc(-x / math.sqrt(2.0)).astype(np.float64)  # 1 + erf(x) loses the tail
    if name == "gelu_tanh":
        return x * _sigmoid(2.0 * _SQRT_2_OVER_PI * (x + 0.044715 * x**3))  # 0.5 x (1 + tanh(u)), no cancellation
    if name == "silu":
        return x * _sigmoid(x)
    if name == "quick_gelu":
        return x * _sigmoid(1.702 * x)
    if name == "hard_swish":
        return x * np.clip(x + 3.0, 0.0, 6.0) / 6.0
    raise ValueError(f"unknown activation {name!r}; expected one of {ops.ACTIVATIONS}")


def _f64(a: np.ndarray | None) -> np.ndarray | None:
    return None if a is None else np.asarray(a).astype(np.float64)


def _check_vec(name: str, v: np.ndarray | None, hidden: int) -> None:
    if v is not None and v.size != hidden:
        raise ValueError(f"{name} has {v.size} values, expected hidden size {hidden}")


def bias_activation(x: np.ndarray, bias: np.ndarray | None = None, activation_name: str = "gelu") -> np.ndarray:
    """y = act(x + bias), bias broadcast over the last dim."""
    x = np.asarray(x)
    s = x.astype(np.float64)
    if bias is not None:
        _check_vec("bias", np.asarray(bias), x.shape[-1])
        s = s + _f64(bias).reshape(-1)
    return activation(activation_name, s).astype(x.dtype)


def gated_activation(
    x: np.ndarray,
    x2: np.ndarray | None = None,
    *,
    activation_name: str = "silu",
    gate: str = "first",
    gate_bias: np.ndarray | None = None,
    linear_bias: np.ndarray | None = None,
) -> np.ndarray:
    """y = act(gate + gate_bias) * (linear + linear_bias). The operands are x and x2 (one shape), or
    without x2 the two halves of x's last dim (as x.chunk(2, -1)); `gate` names the one activated."""
    x = np.asarray(x)
    if x2 is None:
        if x.shape[-1] % 2:
            raise ValueError(f"x has shape {x.shape}: an odd last dim has no two halves")
        first, second = np.split(x.astype(np.float64), 2, axis=-1)
    else:
        if np.shape(x2) != x.shape:
            raise ValueError(f"x2 has shape {np.shape(x2)}, x {x.shape}")
        first, second = x.astype(np.float64), _f64(x2)
    if gate not in ("first", "second"):
        raise ValueError(f"gate is {gate!r}; expected first or second")
    g, lin = (first, second) if gate == "first" else (second, first)
    for name, v in (("gate_bias", gate_bias), ("linear_bias", linear_bias)):
        _check_vec(name, None if v is None else np.asarray(v), g.shape[-1])
    if gate_bias is not None:
        g = g + _f64(gate_bias).reshape(-1)
    if linear_bias is not None:
        lin = lin + _f64(linear_bias).reshape(-1)
    if activation_name not in ops.GATED_ACTIVATIONS:
        raise ValueError(f"unknown activation {activation_name!r}; expected one of {ops.GATED_ACTIVATIONS}")
    return (activation(activation_name, g) * lin).astype(x.dtype)


def skip_norm(
    x: np.ndarray,
    skip: np.ndarray | None = None,
    *,
    gamma: np.ndarray,
    beta: np.ndarray | None = None,
    bias: np.ndarray | None = None,
    norm: str = "layer",
    epsilon: float = 1e-5,
    output_sum: bool = False,
):
    """s = x (+ skip) (+ bias); y = norm(s) * gamma (+ beta).

    skip has x's shape, or broadcasts over x's leading dims ([1,S,H] or [S,H] with x
    [B,S,H]): its rows (size / hidden of them) repeat, row r of x taking skip row
    r % skip_rows. s (and the sum output) has x's shape. Returns y, or (y, s) with output_sum.
    """
    x = np.asarray(x)
    hidden = x.shape[-1]
    for name, v in (("gamma", gamma), ("beta", beta), ("bias", bias)):
        _check_vec(name, None if v is None else np.asarray(v), hidden)
    s = x.astype(np.float64)
    if skip is not None:
        skip = np.asarray(skip)
        core = skip.shape[next((i for i, d in enumerate(skip.shape) if d != 1), skip.ndim):]
        if skip.shape != x.shape and (skip.ndim > x.ndim or not core or core != x.shape[x.ndim - len(core):]):
            raise ValueError(f"skip shape {skip.shape} neither is input shape {x.shape} nor broadcasts over its leading dims")
        if skip.shape == x.shape:
            s = s + _f64(skip)
        else:
            rows = skip.size // hidden
            s = (s.reshape(-1, rows, hidden) + _f64(skip).reshape(rows, hidden)).reshape(x.shape)
    if bias is not None:
        s = s + _f64(bias).reshape(-1)
    if norm == "layer":
        centered = s - s.mean(axis=-1, keepdims=True)
        y = centered / np.sqrt((centered**2).mean(axis=-1, keepdims=True) + epsilon)
    elif norm == "rms":
        y = s / np.sqrt((s**2).mean(axis=-1, keepdims=True) + epsilon)
    else:
        raise ValueError(f"unknown norm {norm!r}; expected one of {ops.NORMS}")
    y = y * _f64(gamma).reshape(-1)
    if beta is not None:
        y = y + _f64(beta).reshape(-1)
    y = y.astype(x.dtype)
    return (y, s.astype(x.dtype)) if output_sum else y


def legacy_gelu(x: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """TensorRT OSS's CustomGeluPluginDynamic: gelu_tanh(x + bias), bias over the hidden dim (the
    last dim that is not a trailing 1: E of [S, B, E, 1, 1])."""
    x = np.asarray(x)
    k = x.ndim - 1
    while k > 0 and x.shape[k] == 1:
        k -= 1
    s = x.astype(np.float64)
    if bias is not None:
        _check_vec("bias", np.asarray(bias), x.shape[k] if x.ndim else 1)
        shape = [1] * x.ndim
        shape[k] = -1
        s = s + _f64(bias).reshape(shape)
    return activation("gelu_tanh", s).astype(x.dtype)


def group_norm(
    x: np.ndarray,
    skip: np.ndarray | None = None,
    *,
    num_groups: int,
    gamma: np.ndarray,
    beta: np.ndarray | None = None,
    bias: np.ndarray | None = None,
    activation_name: str = "none",
    epsilon: float = 1e-5,
    output_sum: bool = False,
):
    """s = x (+ bias[c]) (+ skip); y = act((s - mean_g) / sqrt(var_g + eps) * gamma[c] + beta[c]).

    x is N, C, spatial... (rank >= 3); a group is C / num_groups channels of one sample. skip has
    x's shape or [N, C, 1, ...] (one value per sample and channel). Returns y, or (y, s) with output_sum.
    """
    x = np.asarray(x)
    if x.ndim < 3:
        raise ValueError(f"x has shape {x.shape}; expected N, C, spatial... (rank >= 3)")
    n, c = x.shape[:2]
    if num_groups < 1 or c % num_groups:
        raise ValueError(f"{c} channels are not divisible by num_groups {num_groups}")
    for name, v in (("gamma", gamma), ("beta", beta), ("bias", bias)):
        _check_vec(name, None if v is None else np.asarray(v), c)
    chan = (1, c) + (1,) * (x.ndim - 2)
    s = x.astype(np.float64)
    if bias is not None:
        s = s + _f64(bias).reshape(chan)
    if skip is not None:
        skip = np.asarray(skip)
        if skip.shape != x.shape and skip.shape != (n, c) + (1,) * (x.ndim - 2):
            raise ValueError(f"skip shape {skip.shape} is neither x's {x.shape} nor [N, C, 1, ...]")
        s = s + _f64(skip)
    g = s.reshape(n, num_groups, c // num_groups * int(np.prod(x.shape[2:])))
    centered = g - g.mean(axis=-1, keepdims=True)
    y = (centered / np.sqrt((centered**2).mean(axis=-1, keepdims=True) + epsilon)).reshape(x.shape)
    y = y * _f64(gamma).reshape(chan)
    if beta is not None:
        y = y + _f64(beta).reshape(chan)
    if activation_name == "silu":
        y = activation("silu", y)
    elif activation_name != "none":
        raise ValueError(f"unknown GroupNorm activation {activation_name!r}; expected none or silu")
    y = y.astype(x.dtype)
    return (y, s.astype(x.dtype)) if output_sum else y


def run(op_type: str, inputs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    """Evaluate a plugin node: its op_type, its data inputs and its attributes
    (creator field names; weights as arrays). Returns the list of outputs."""
    spec = ops.spec(op_type)
    unknown = set(attrs) - {f.name for f in spec.fields} - {"plugin_version", "plugin_namespace"}
    if unknown:
        raise ValueError(f"{op_type}: unknown attributes {sorted(unknown)}")
    if not spec.min_inputs <= len(inputs) <= spec.max_inputs:
        raise ValueError(f"{op_type} takes {spec.min_inputs}..{spec.max_inputs} inputs, got {len(inputs)}")
    if op_type == ops.BIAS_ACTIVATION:
        return [bias_activation(inputs[0], attrs.get("bias"), attrs["activation"])]
    if op_type == ops.GATED_ACTIVATION:
        return [gated_activation(inputs[0], inputs[1] if len(inputs) > 1 else None,
                                 activation_name=attrs["activation"], gate=attrs.get("gate", "first"),
                                 gate_bias=attrs.get("gate_bias"), linear_bias=attrs.get("linear_bias"))]
    if op_type == ops.LEGACY_GELU:
        return [legacy_gelu(inputs[0], attrs.get("bias"))]
    if op_type == ops.GROUP_NORM:
        out = group_norm(
            inputs[0],
            inputs[1] if len(inputs) > 1 else None,
            num_groups=int(attrs["num_groups"]),
            gamma=attrs["gamma"],
            beta=attrs.get("beta"),
            bias=attrs.get("bias"),
            activation_name=attrs.get("activation", "none"),
            epsilon=float(attrs.get("epsilon", 1e-5)),
            output_sum=bool(int(attrs.get("output_sum", 0))),
        )
        return list(out) if isinstance(out, tuple) else [out]
    out = skip_norm(
        inputs[0],
        inputs[1] if len(inputs) > 1 else None,
        gamma=attrs["gamma"],
        beta=attrs.get("beta"),
        bias=attrs.get("bias"),
        norm=attrs["norm"],
        epsilon=float(attrs.get("epsilon", 1e-5)),
        output_sum=bool(int(attrs.get("output_sum", 0))),
    )
    return list(out) if isinstance(out, tuple) else [out]
