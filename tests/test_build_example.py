"""The C++ service example compiles against the TensorRT 10 and 11 headers (no libnvinfer needed)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_SHARED = ROOT.parent / "shared" / "tensorrt-headers"  # the public headers beside a CI clone
ROOTS = [r for r in os.environ.get("TRTPLUGINS_TENSORRT_ROOTS", f"{_SHARED}/10.16;{_SHARED}/11.1").split(";") if r]


@pytest.mark.parametrize("trt_root", ROOTS)
def test_service_compiles(trt_root):
    cxx = shutil.which("g++") or shutil.which("c++")
    if not cxx:
        pytest.skip("no C++ compiler")
    if not (Path(trt_root) / "include" / "NvInferRuntime.h").is_file():
        pytest.skip(f"TensorRT headers not found under {trt_root}")
    cuda = next((p for p in ("/usr/local/cuda/include", "/usr/include") if Path(p, "cuda_runtime_api.h").is_file()), None)
    if cuda is None:
        pytest.skip("CUDA headers (cuda_runtime_api.h) not found")
    r = subprocess.run([cxx, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                        "-isystem", f"{trt_root}/include", "-isystem", cuda,
                        str(ROOT / "examples" / "cpp" / "service.cpp")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
