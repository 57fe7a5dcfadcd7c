"""trtplugins: fused CUDA kernels as TensorRT plugins, and the tools around them."""

from . import ops, reference

__version__ = "0.1.0"
__all__ = ["ops", "reference", "__version__"]
