"""The fused ops for PyTorch: torch.library custom ops, drop-in modules, fuse(model), and an
ONNX export that writes the ops as plugin nodes.

    import trtplugins.torch as tt
    report = tt.fuse(model)           # LayerNorm / GroupNorm (+ SiLU) / RMSNorm / GEGLU / act(a) * b -> fused
    tt.export(model, args, "model.onnx")   # plugin nodes (domain trtplugins, plugin_version "2")

Ops: torch.ops.trtplugins.{skip_norm, group_norm, bias_activation, gated_activation} (the
functions of the same names here return a tensor, or a tuple with output_sum=1). CUDA runs the
project's kernels (libtrtplugins_kernels.so), any other device the torch implementation (cpu.py).
Inference only. use_cpp(): the fused modules' eager CUDA calls through C++ built against this torch (_cpp.py)."""

from ._cpp import use_cpp
from .fuse import FuseReport, fuse
from .library import bias_activation, gated_activation, group_norm, skip_norm
from .modules import FusedActivation, FusedGatedLinear, FusedGroupNorm, FusedLayerNorm, FusedRMSNorm

__all__ = ["FuseReport", "FusedActivation", "FusedGatedLinear", "FusedGroupNorm", "FusedLayerNorm", "FusedRMSNorm",
           "bias_activation", "export", "fuse", "gated_activation", "group_norm", "skip_norm", "to_plugin_nodes",
           "use_cpp"]


def __getattr__(name: str):
    if name in ("export", "to_plugin_nodes"):  # onnx and onnxscript only when exporting
        from . import onnx_export

        return getattr(onnx_export, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
