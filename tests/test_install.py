"""Issue 32: installing builds nothing native without TensorRT headers, keeps the values given once,
installs one `trtplugins` command, and the scripts never shadow the installed package.
Real pip, real scikit-build-core and CMake (build isolation, the project's own pyproject.toml)."""
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: what the build reads from the environment; cleared so only what a test sets counts
BUILD_ENV = ("TRTPLUGINS_CUDA_ARCHS", "TRTPLUGINS_TENSORRT_ROOTS", "TENSORRT_ROOT", "TRTPLUGINS_BUILD_KERNELS",
             "TRTPLUGINS_BUILD_TESTS")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in BUILD_ENV and not k.startswith("SKBUILD")}
    return {**env, **extra}


def _wheel(out: Path, build_dir: Path, **env) -> tuple[Path, float]:
    """pip wheel of this clone into `out`, built in `build_dir`: (the wheel, seconds)."""
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(out),
                        "-C", f"build-dir={build_dir}"], capture_output=True, text=True, env=_env(**env), timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (wheel,) = out.glob("trtplugins-*.whl")
    return wheel, time.perf_counter() - t0


def _cache(build_dir: Path, name: str) -> str:
    for line in (build_dir / "CMakeCache.txt").read_text().splitlines():
        if line.startswith(f"{name}:"):
            return line.split("=", 1)[1]
    raise KeyError(name)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """A wheel built without TensorRT headers, whose build dir was first configured with
    TRTPLUGINS_CUDA_ARCHS=86-real and then built again without it."""
    tmp = tmp_path_factory.mktemp("wheel")
    build_dir = tmp / "build"
    _wheel(tmp / "first", build_dir, TRTPLUGINS_CUDA_ARCHS="86-real")
    path, seconds = _wheel(tmp / "second", build_dir)
    return path, seconds, build_dir


def test_no_headers_builds_nothing_native(wheel):
    """Defect 1 of the install: without TensorRT headers pip compiled kernels for 9 targets (17 min)."""
    path, seconds, build_dir = wheel
    names = zipfile.ZipFile(path).namelist()
    assert not [n for n in names if n.endswith(".so")], names
    assert "trtplugins/cli.py" in names
    assert not list(build_dir.rglob("*.o")) and not (build_dir / "CMakeFiles" / "trtplugins_kernels.dir").exists()
    assert seconds < 120, f"a wheel without native code took {seconds:.0f} s"


def test_values_given_once_are_kept(wheel):
    """Defect 2 of the install: pyproject passed "" for TRTPLUGINS_CUDA_ARCHS every time, which reset
    the CMake cache on a reinstall without the variable."""
    assert _cache(wheel[2], "TRTPLUGINS_CUDA_ARCHS") == "86-real"


def test_one_command_installed(wheel, tmp_path):
    """The wheel installs a `trtplugins` command; installed without native libraries, `trtplugins`
    (info) says so in one line and exits 0."""
    path = wheel[0]
    entry = next(n for n in zipfile.ZipFile(path).namelist() if n.endswith("entry_points.txt"))
    assert "trtplugins = trtplugins.cli:main" in zipfile.ZipFile(path).read(entry).decode()
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    # -S: no .pth files, so an editable install of this clone (CI's) does not take the package's place;
    # the dependencies come from this interpreter's site-packages, after the wheel's
    deps = sysconfig.get_paths()["purelib"]
    r = subprocess.run([sys.executable, "-S", str(site / "bin" / "trtplugins")], capture_output=True, text=True,
                       cwd=tmp_path, env=_env(PYTHONPATH=os.pathsep.join([str(site), deps])), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert any(ln.startswith("native libraries: none: the install found no TensorRT headers") for ln in lines), r.stdout
    assert str(site / "trtplugins") in r.stdout and lines[-1].startswith("OK")


def test_scripts_run_the_installed_package(tmp_path):
    """A script of a clone runs the installed trtplugins, not the clone's copy in front of it."""
    fake = tmp_path / "site" / "trtplugins"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "cli.py").write_text("def main(argv):\n    print('installed', argv)\n    return 0\n")
    for script in ("build_engine.py", "substitute_plugins.py", "validate.py", "export_demo.py"):
        # -S: no .pth files, so an editable install of this clone (CI's) is not what is installed here
        r = subprocess.run([sys.executable, "-S", str(ROOT / "scripts" / script), "x.onnx"], capture_output=True,
                           text=True, cwd=tmp_path, env=_env(PYTHONPATH=str(tmp_path / "site")), timeout=60)
        assert r.returncode == 0 and r.stdout.startswith("installed ["), (script, r.stdout, r.stderr)
        assert r.stdout.strip().endswith("'x.onnx']")


def test_python_m_and_command_help():
    r = subprocess.run([sys.executable, "-m", "trtplugins", "--help"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0
    for name in ("info", "demo", "export-demo", "substitute", "build", "validate", "export-models"):
        assert f"\n  {name} " in r.stdout
    r = subprocess.run([sys.executable, "-m", "trtplugins", "bogus"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("error: unknown command 'bogus'")


DEFAULT_ARCHS = "75-real;80-real;86-real;87-real;89-real;90-real;100-real;120-real;120-virtual"


@pytest.mark.parametrize("caps, archs", [("9.0\n8.6\n9.0\n", "90-real;86-real"), (None, DEFAULT_ARCHS)])
def test_archs_follow_the_machine_s_gpus(tmp_path, caps, archs):
    """With headers and no TRTPLUGINS_CUDA_ARCHS the build targets the GPUs nvidia-smi reports (here a
    stand-in for it), and without one the default list. Real CMake configure of plugin_src."""
    headers = Path(os.environ.get("TRTPLUGINS_TENSORRT_ROOTS", str(ROOT.parent / "shared" / "tensorrt-headers" / "11.1"))
                   .split(";")[-1])
    if not (headers / "include" / "NvInfer.h").is_file() or not shutil.which("nvcc"):
        pytest.skip("TensorRT headers or nvcc not found")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    path = [str(bin_dir), *(p for p in os.environ["PATH"].split(os.pathsep) if not (Path(p) / "nvidia-smi").exists())]
    path.insert(1, str(Path(shutil.which("nvcc")).parent))
    if caps is not None:
        smi = bin_dir / "nvidia-smi"
        smi.write_text("#!/bin/sh\nprintf '" + caps.replace("\n", "\\n") + "'\n")
        smi.chmod(0o755)
    r = subprocess.run(["cmake", "-S", str(ROOT / "plugin_src"), "-B", str(tmp_path / "b"), "-DTRTPLUGINS_BUILD_TESTS=OFF",
                        f"-DTRTPLUGINS_TENSORRT_ROOTS={headers}"], capture_output=True, text=True,
                       env=_env(PATH=os.pathsep.join(path)), timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert f"plugin libraries for TensorRT 11, for {archs}" in r.stdout, r.stdout[-2000:]
