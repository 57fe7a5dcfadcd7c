"""What the ops' NumPy references share (each op's is `trtplugins.ops.<op>.reference`; evaluate a
plugin node with `trtplugins.ops.registry.run_reference`): the activations, in float64.

References are the single source of truth for numerics: math runs in float64 on the given inputs
and the result is cast once to the input dtype (float32, float16 or ml_dtypes.bfloat16 where
installed). The kernels accumulate in FP32 without rounding intermediates to the I/O type, so this
is the exact function they approximate.
"""

from __future__ import annotations

import math

import numpy as np

from . import schema

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
    raise ValueError(f"unknown activation {name!r}; expected one of {schema.ACTIVATIONS}")


def f64(a: np.ndarray | None) -> np.ndarray | None:
    return None if a is None else np.asarray(a).astype(np.float64)


def check_vec(name: str, v: np.ndarray | None, hidden: int) -> None:
    if v is not None and v.size != hidden:
        raise ValueError(f"{name} has {v.size} values, expected hidden size {hidden}")


def rows_broadcast(shape, skip_shape) -> bool:
    """Whether skip_shape is shape, or shape's last dims with leading 1s (never the last dim): its rows repeat
    over x's leading dims. SkipNorm's skip rule, as the kernels' trtp_skip_norm_skip_rows states it; the dims
    may be symbolic (any value compared for equality)."""
    shape, skip_shape = tuple(shape), tuple(skip_shape)
    core = skip_shape[next((i for i, d in enumerate(skip_shape[:-1]) if d != 1), max(len(skip_shape) - 1, 0)):]
    return skip_shape == shape or (bool(core) and len(skip_shape) <= len(shape)
                                   and core == shape[len(shape) - len(core):])
