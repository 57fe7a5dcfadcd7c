"""trtplugins.torch's C++ launches (_cpp.py, csrc/launch.cpp) on a CPU machine: the source compiles against
this torch's headers, CUDA's and the kernel library's own C declarations (kernels.h: a signature changed there
fails here, not at a user's build), and use_cpp() refuses without CUDA in one line. Built and run on the GPU:
tests/gpu/test_torch_cpp.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="trtplugins.torch needs torch (pip install torch==2.13.0)")

from trtplugins.torch import _cpp  # noqa: E402


def _cuda_include() -> Path | None:
    from torch.utils import cpp_extension

    roots = [cpp_extension.CUDA_HOME] + [str(Path(p).resolve().parents[1]) for p in [shutil.which("nvcc")] if p]
    roots += sorted(map(str, Path("/usr/local").glob("cuda*")), reverse=True)
    return next((Path(r) / "include" for r in roots if r and (Path(r) / "include" / "cuda_runtime_api.h").is_file()),
                None)


def test_launch_source_compiles_against_torch_and_the_c_entries(tmp_path):
    from torch.utils import cpp_extension

    gxx, cuda = shutil.which("g++"), _cuda_include()
    if gxx is None or cuda is None:
        pytest.skip(f"compiling needs g++ and CUDA's headers (found g++ {gxx}, cuda_runtime_api.h in {cuda})")
    includes = [*cpp_extension.include_paths(), str(cuda), str(_cpp.header_dir()), sysconfig.get_paths()["include"]]
    generated = "c10/cuda/impl/cuda_cmake_macros.h"  # written by torch's CUDA builds only: a CPU wheel lacks it
    if not any((Path(i) / generated).is_file() for i in includes):
        (tmp_path / generated).parent.mkdir(parents=True)
        (tmp_path / generated).write_text("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
        includes.append(str(tmp_path))
    cmd = [gxx, "-std=c++20", "-fsyntax-only", "-Wall", "-Werror=return-type", f"-DTORCH_EXTENSION_NAME={_cpp.NAME}",
           *(f"-I{i}" for i in includes), str(_cpp.SOURCE)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert not [line for line in out.stderr.splitlines() if str(_cpp.SOURCE) in line and "warning" in line], out.stderr


def test_use_cpp_needs_cuda_and_says_so(monkeypatch):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: tests/gpu/test_torch_cpp.py builds the launches")
    with pytest.raises(RuntimeError, match=r"^trtplugins.torch.use_cpp: needs torch with CUDA and a GPU$"):
        _cpp.use_cpp()
    assert _cpp.ext is None
    monkeypatch.setenv(_cpp.ENV_VAR, "1")
    with pytest.warns(RuntimeWarning, match="needs torch with CUDA"):
        _cpp.from_env()
    assert _cpp.header_dir() == Path(_cpp.__file__).resolve().parents[2] / "plugin_src" / "capi"
    assert sys.modules["trtplugins.torch"].use_cpp is _cpp.use_cpp
