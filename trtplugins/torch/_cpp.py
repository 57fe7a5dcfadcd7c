"""The fused modules' eager CUDA calls in C++ (csrc/launch.cpp), built on request against the torch in use by
torch.utils.cpp_extension (a C++ compiler, ninja and CUDA's headers needed; built once, then loaded from torch's
extension cache). A fused module's eager call then runs no Python of this package past its forward: the C++
does what _kernels.py's prepared launches do and calls the kernel library's C entry (benchmarks/RESULTS.md,
PyTorch run 12: that Python, not the kernels, is what costs an eager SD UNet its host time).

    trtplugins.torch.use_cpp()    # or TRTPLUGINS_TORCH_CPP=1: built at the first eager CUDA call

Compiled graphs, traces and exports still see the op; a call the C++ does not take (CPU tensors, mixed
dtypes or devices, a gradient asked for, shapes of another form) goes to the op, which says what is wrong."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

ENV_VAR = "TRTPLUGINS_TORCH_CPP"
NAME = "trtplugins_torch_launch"
SOURCE = Path(__file__).with_name("csrc") / "launch.cpp"
ext = None  # the built module once use_cpp() succeeded: the fused modules call it while set


def header_dir() -> Path:
    """The folder of the kernel library's C declarations (kernels.h): the installed package's include/, or the
    source tree's plugin_src/capi."""
    pkg = Path(__file__).resolve().parents[1]
    dirs = (pkg / "include", pkg.parent / "plugin_src" / "capi")
    for d in dirs:
        if (d / "kernels.h").is_file():
            return d
    raise FileNotFoundError(f"kernels.h is in none of {', '.join(map(str, dirs))}")


def use_cpp(verbose: bool = False):
    """Build (the first time; then torch's cache) and use the C++ launches; returns the module. Raises
    RuntimeError naming what is missing where they cannot be built (the Python launches then stay)."""
    global ext
    if ext is not None:
        return ext
    import torch
    from torch.utils import cpp_extension

    from .. import kernels

    if not torch.cuda.is_available() or torch.version.cuda is None:
        raise RuntimeError("trtplugins.torch.use_cpp: needs torch with CUDA and a GPU")
    lib = Path(kernels.load()._name)
    try:
        mod = cpp_extension.load(
            name=NAME, sources=[str(SOURCE)], extra_include_paths=[str(header_dir())],
            extra_ldflags=[f"-L{lib.parent}", f"-l:{lib.name}", f"-Wl,-rpath,{lib.parent}"], with_cuda=True,
            verbose=verbose)
    except Exception as e:  # no compiler, ninja or CUDA headers; a build error
        first = (str(e).strip().splitlines() or [""])[0]
        raise RuntimeError(f"trtplugins.torch.use_cpp: the C++ launches could not be built ({type(e).__name__}: "
                           f"{first})") from e
    enums = kernels.enums()
    mod.set_ids([enums["dtype"][d] for d in ("float32", "float16", "bfloat16")],
                [enums["group_norm_skip"][m] for m in ("none", "full", "per_channel")])
    ext = mod
    return mod


def from_env() -> None:
    """use_cpp() where TRTPLUGINS_TORCH_CPP=1 (a failure warns, once: the Python launches stay)."""
    if os.environ.get(ENV_VAR) == "1" and ext is None:
        try:
            use_cpp()
        except RuntimeError as e:
            warnings.warn(str(e), RuntimeWarning, stacklevel=2)
