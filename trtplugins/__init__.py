"""trtplugins: fused CUDA kernels as TensorRT plugins, and the tools around them."""

from . import ops, reference
from .loader import PluginLibraryError, library_path, list_plugins, load, trt_major, trt_module
from .fields import add_plugin, create_plugin

__version__ = "0.1.0"
__all__ = [
    "PluginLibraryError",
    "add_plugin",
    "create_plugin",
    "library_path",
    "list_plugins",
    "load",
    "ops",
    "reference",
    "trt_major",
    "trt_module",
    "__version__",
]
