"""trtplugins.loader: the one place that finds TensorRT, names and loads the libraries
(real lean runtime, real built libraries), and `python -m trtplugins`."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from trtplugins import loader

ROOT = Path(__file__).resolve().parents[1]


def _main(env_extra):
    env = dict(os.environ, **env_extra)
    return subprocess.run([sys.executable, "-m", "trtplugins"], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=120)


def test_library_names_and_majors():
    assert loader.library_name(11) == "libtrtplugins_trt11.so"
    assert loader.library_name(10, "autoreg") == "libtrtplugins_trt10_autoreg.so"
    assert loader.major_of(Path("/x/libtrtplugins_trt10_autoreg.so")) == 10
    with pytest.raises(ValueError, match="variant"):
        loader.library_name(11, "static")


def test_env_library_that_does_not_exist_is_an_error(monkeypatch):
    """Defect 6: TRTPLUGINS_LIBRARY=/nonexistent.so was ignored and the default library loaded."""
    monkeypatch.setenv(loader.LIBRARY_ENV, "/nonexistent.so")
    with pytest.raises(loader.PluginLibraryError, match="TRTPLUGINS_LIBRARY=/nonexistent.so: no such file"):
        loader.library_path(11)


def test_file_that_is_not_a_library(tmp_path):
    """Defect 6: a non-library file said 'see the TensorRT log above' with nothing above."""
    text = tmp_path / "libtrtplugins_trt11.so"
    text.write_text("not a library")
    with pytest.raises(loader.PluginLibraryError, match="not a shared library"):
        loader.check_library_file(text)
    with pytest.raises(loader.PluginLibraryError, match="is a folder"):
        loader.check_library_file(tmp_path)


def test_python_m_trtplugins_reports_and_fails_with_the_reason(tmp_path):
    built, _ = loader.find_library("libtrtplugins_trt11.so")
    if built is None:
        pytest.skip("libtrtplugins_trt11.so not built (needs nvcc and TensorRT 11 headers)")
    r = _main({})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "built plugin libraries: " in r.stdout and "libtrtplugins_trt11.so" in r.stdout
    assert "BiasActivation v1" in r.stdout and r.stdout.strip().endswith("OK")
    r = _main({loader.LIBRARY_ENV: "/nonexistent.so"})
    assert r.returncode == 1 and "FAILED: load: TRTPLUGINS_LIBRARY=/nonexistent.so: no such file" in r.stdout
    junk = tmp_path / "x.so"
    junk.write_text("x")
    r = _main({loader.LIBRARY_ENV: str(junk)})
    assert r.returncode == 1 and "not a shared library" in r.stdout and "Traceback" not in r.stderr


def test_the_wrong_major_is_refused_by_name():
    built, _ = loader.find_library("libtrtplugins_trt10.so")
    if built is None:
        pytest.skip("libtrtplugins_trt10.so not built (needs nvcc and TensorRT 10 headers)")
    mod = loader.trt_module()
    if loader.trt_major(mod) == 10:
        built, _ = loader.find_library("libtrtplugins_trt11.so")
    with pytest.raises(loader.PluginLibraryError, match="is built for TensorRT .* load libtrtplugins_trt"):
        loader.load(path=built, mod=mod)


def test_tensorrt_is_imported_in_one_place():
    """Issue 10 item 5: module discovery, library naming and loading live in loader.py only."""
    pkg = ROOT / "trtplugins"
    offenders = []
    for p in pkg.rglob("*.py"):
        if p.name == "loader.py":
            continue
        text = p.read_text()
        if re.search(r"import_module\(|__import__\(|ctypes\.CDLL\(|\.load_library\(|libtrtplugins_trt\{", text):
            offenders.append(str(p.relative_to(ROOT)))
    # kernels.py loads the bare kernel library (no TensorRT) through loader.find_library
    assert sorted(offenders) in ([], ["trtplugins/kernels.py"]), offenders


def test_only_pip_build_folders_are_searched(tmp_path):
    """Defect 7 of issue 32: scripts/gpu_check.sh left build/gpu, which joined the search path, where the
    newest library wins. Only build/<wheel tag>/ (pip's) is searched; gpu_check.sh builds in build-gpu/."""
    for name in ("py3-none-linux_x86_64", "cp311-cp311-linux_x86_64", "gpu", "ab", "example", "torch-gpu-kernels"):
        (tmp_path / "build" / name).mkdir(parents=True)
    assert [p.name for p in loader.build_dirs(tmp_path)] == ["cp311-cp311-linux_x86_64", "py3-none-linux_x86_64"]
    assert "BUILD=build-gpu" in (ROOT / "scripts" / "gpu_check.sh").read_text()


def test_library_folder_env_wins(tmp_path, monkeypatch):
    """A TRTPLUGINS_LIBRARY folder (gpu_check.sh's build) is used even where a build/ library is newer."""
    lib = tmp_path / "libtrtplugins_kernels.so"
    lib.write_bytes(b"\x7fELF")
    os.utime(lib, (0, 0))
    monkeypatch.setenv(loader.LIBRARY_ENV, str(tmp_path))
    assert loader.find_library(lib.name)[0] == lib


def test_gpu_check_help_builds_nothing():
    """Defect 7: `gpu_check.sh --help` started a real build with unbounded -j."""
    before = {p.name for p in ROOT.iterdir()}
    r = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--help"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0 and "TRT_ROOTS=" in r.stdout and "cmake" not in r.stdout
    assert {p.name for p in ROOT.iterdir()} == before
    r = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--bogus"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2 and r.stderr.startswith("error: unknown argument --bogus")
    assert '-j "${JOBS:-$(nproc)}"' in (ROOT / "scripts" / "gpu_check.sh").read_text()


def test_bench_kernels_help_without_torch():
    """Defect 7: `bench_kernels.py --help` crashed without torch."""
    code = f"""
import runpy, sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "torch":
            raise ImportError("torch blocked: not installed")
sys.meta_path.insert(0, Block())
sys.argv = ["bench_kernels.py", "--help"]
sys.path.insert(0, {str(ROOT / 'scripts')!r})
runpy.run_path({str(ROOT / 'scripts' / 'bench_kernels.py')!r}, run_name="__main__")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "--sweep" in r.stdout and "Traceback" not in r.stderr, r.stderr[-2000:]
    r = subprocess.run([sys.executable, "-c", code.replace('"--help"', '"--no-compile"')], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and r.stderr.startswith("error: the benchmark needs torch"), r.stderr[-2000:]


def _main_without(tmp_path, blocked: tuple[str, ...]):
    """`python -m trtplugins` in a process where the modules `blocked` cannot be imported."""
    (tmp_path / "sitecustomize.py").write_text(f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError(name + " blocked: not installed here")
sys.meta_path.insert(0, Block())
""")
    return _main({"PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])})


def test_python_m_trtplugins_with_tensorrt_rtx_only(tmp_path):
    """Defect 1 of issue 32: with only TensorRT-RTX installed `python -m trtplugins` said FAILED (no
    TensorRT module), though `build_engine.py --backend rtx` works, and never said that the graph tools
    need no TensorRT. The library loads into TensorRT-RTX's registry, which builds."""
    pytest.importorskip("tensorrt_rtx_bindings", reason="TensorRT-RTX (tensorrt-rtx-cu13-bindings) not installed")
    if loader.find_library("libtrtplugins_trt11.so")[0] is None:
        pytest.skip("libtrtplugins_trt11.so not built (needs nvcc and TensorRT 11 headers)")
    r = _main_without(tmp_path, ("tensorrt", "tensorrt_lean", "tensorrt_lean_bindings"))
    assert r.returncode == 0 and "FAILED" not in r.stdout, r.stdout + r.stderr
    assert "graph tools (substitute, FP16, validation on the CPU) ready: they need no TensorRT" in r.stdout
    assert "engine builder: TensorRT-RTX 1." in r.stdout and "loaded into TensorRT-RTX 1." in r.stdout
    assert "SkipNorm v2" in r.stdout and r.stdout.splitlines()[-1] == "OK"


def test_python_m_trtplugins_without_any_tensorrt(tmp_path):
    r = _main_without(tmp_path, ("tensorrt", "tensorrt_lean", "tensorrt_lean_bindings", "tensorrt_rtx",
                                 "tensorrt_rtx_bindings"))
    assert r.returncode == 0 and "FAILED" not in r.stdout, r.stdout + r.stderr
    assert "TensorRT module: none installed" in r.stdout and "engine builder: none (pip install 'trtplugins[rtx]'" in r.stdout
    assert r.stdout.splitlines()[-1].startswith("OK: graph tools")
