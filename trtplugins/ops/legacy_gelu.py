"""CustomGeluPluginDynamic: TensorRT OSS's GELU plugin, removed in TensorRT 11.0, under its name,
version "1" and public fields, so models and engines that name it build on TensorRT 11 unchanged:
y = gelu_tanh(x + bias), bias optional, over the hidden dim (the last dim that is not a trailing
1: E of [S, B, E, 1, 1] in the BERT samples). BiasActivation's kernel computes it.

Its numpy reference and kernel binding (the C entry: BiasActivation's kernel behind this op's
declaration). No pattern: models name this plugin themselves (a GELU found in a graph becomes a
BiasActivation).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..reference import activation, check_vec, f64
from . import LEGACY_GELU

PATTERNS = ()
#: fields and input shapes of one instance (tests, docs)
EXAMPLE = ({"type_id": 0, "bias": np.linspace(-1, 1, 24, dtype=np.float32)}, [(4, 2, 24, 1, 1)])
#: the op folder whose kernel computes it (plugin_src/ops/bias_activation/)
KERNEL = "bias_activation"
#: why no pattern writes it
NO_PATTERN = "models name this plugin themselves; a GELU found in a graph becomes a BiasActivation"


def reference(x: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
    """gelu_tanh(x + bias), bias over the hidden dim (the last dim that is not a trailing 1)."""
    x = np.asarray(x)
    k = x.ndim - 1
    while k > 0 and x.shape[k] == 1:
        k -= 1
    s = x.astype(np.float64)
    if bias is not None:
        check_vec("bias", np.asarray(bias), x.shape[k] if x.ndim else 1)
        shape = [1] * x.ndim
        shape[k] = -1
        s = s + f64(bias).reshape(shape)
    return activation("gelu_tanh", s).astype(x.dtype)


def node_reference(inputs: Sequence[np.ndarray | None], attrs: dict[str, Any]) -> list[np.ndarray]:
    return [reference(inputs[0], attrs.get("bias"))]


def kernel(x, bias=None, *, type_id: int = 0, out=None):
    """The plugin's math on a torch CUDA tensor, through the C entry (trtplugins.kernels.Kernel)."""
    from .. import kernels

    return kernels.Kernel(LEGACY_GELU, type_id=type_id, bias=bias)(x, out=out)
