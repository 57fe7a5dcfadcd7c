"""The C++ service example compiles against the TensorRT 10 and 11 headers (no libnvinfer needed)."""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
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


def _configure(tmp_path, *defines):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if not shutil.which("cmake") or not (Path(ROOTS[-1]) / "include" / "NvInferRuntime.h").is_file():
        pytest.skip("cmake or the TensorRT headers not found")
    return subprocess.run(["cmake", "-S", str(ROOT / "examples" / "cpp"), "-B", str(tmp_path / "b"),
                           f"-DTENSORRT_ROOT={ROOTS[-1]}", *defines], capture_output=True, text=True, env=env,
                          timeout=300)


def test_missing_libnvinfer_is_an_error_not_a_silent_compile_only(tmp_path):
    """Defect 10 of issue 32: without libnvinfer the example fell back silently to compile-only."""
    r = _configure(tmp_path, "-DCMAKE_DISABLE_FIND_PACKAGE_Python3=ON", "-DTENSORRT_LIB_DIR=/nonexistent")
    assert r.returncode != 0 and "libnvinfer not found" in r.stderr, r.stdout[-2000:] + r.stderr[-2000:]
    r = _configure(tmp_path, "-DCMAKE_DISABLE_FIND_PACKAGE_Python3=ON", "-DSERVICE_COMPILE_ONLY=ON")
    assert r.returncode == 0, r.stderr[-2000:]


def test_service_links_pip_libnvinfer_and_opens_a_bare_library_name(tmp_path):
    """Defect 10: find_library(nvinfer) missed pip's versioned libnvinfer.so.N, and `service demo.plan
    libtrtplugins_trt11_autoreg.so` (deploy.md's command) failed in dlopen: a bare name is looked for
    on the library path only. The service links the pip lean runtime here and opens the library in the
    current folder, where it stops: the plan it is given does not exist (a real one needs a GPU)."""
    from trtplugins import loader

    if importlib.util.find_spec("tensorrt_lean_libs") is None and importlib.util.find_spec("tensorrt_libs") is None:
        pytest.skip("no pip TensorRT runtime (tensorrt-lean-cu13-libs) installed")
    lib, _ = loader.find_library("libtrtplugins_trt11_autoreg.so")
    if lib is None:
        pytest.skip("libtrtplugins_trt11_autoreg.so not built (needs nvcc and TensorRT 11 headers)")
    r = _configure(tmp_path)
    assert r.returncode == 0 and re.search(r"service links .*/tensorrt_(lean_)?libs/libnvinfer(_lean)?\.so\.11", r.stdout), \
        r.stdout[-2000:] + r.stderr[-2000:]
    r = subprocess.run(["cmake", "--build", str(tmp_path / "b")], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:]
    plan = tmp_path / "junk.plan"
    plan.write_bytes(b"not a plan")
    r = subprocess.run([str(tmp_path / "b" / "service"), str(plan), lib.name], capture_output=True, text=True,
                       cwd=lib.parent, timeout=120)  # loaded: it stops at the GPU (or, on one, at the junk plan)
    assert r.returncode == 1 and re.fullmatch(r"error: (no CUDA device: .*|deserialize failed .*)\n", r.stderr), r.stderr
    r = subprocess.run([str(tmp_path / "b" / "service"), str(plan), lib.name], capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)  # where it is not: dlopen searches the library path, and says so
    assert r.returncode == 1 and r.stderr.startswith(f"error: dlopen: {lib.name}: cannot open shared object"), r.stderr
