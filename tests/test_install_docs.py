"""The light default install and the documents that tell users how to install (defect 11)."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GRAPH_TOOLS = {"numpy", "onnx", "onnx-graphsurgeon", "polygraphy", "onnxruntime"}


def _dependencies() -> set[str]:
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return {re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0].lower() for d in deps}


def test_default_install_is_the_graph_tools_without_torch():
    assert _dependencies() == GRAPH_TOOLS


def test_deploy_quick_start_installs_the_project():
    """docs/deploy.md's quick start omitted onnx-graphsurgeon, and `--target cpu` then failed."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    quick = text.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    assert re.search(r"^pip install \.\s", quick, re.M), quick
    assert "--target cpu" in quick


def test_cpu_validation_needs_only_the_default_install(demo):
    """The quick start's CPU validation works with the extras' packages made unimportable (as on a
    machine with only the default install)."""
    code = f"""
import sys
HEAVY = ("torch", "transformers", "onnxscript", "tensorrt", "tensorrt_lean", "tensorrt_lean_bindings", "tensorrt_rtx",
         "tensorrt_rtx_bindings", "cuda", "pycuda", "tritonclient")

class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HEAVY:
            raise ImportError(f"{{name}} blocked: not part of the default install")

sys.meta_path.insert(0, Block())
from trtplugins import validate as V
r = V.validate({str(demo)!r}, target="cpu", shapes={{"x": (1, 4, 64)}}, log=lambda *_: None)
print("passed:", r.passed)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().splitlines()[-1] == "passed: True"


def _bash_block(text: str, after: str) -> list[str]:
    """The commands of the first ```bash block after `after` (comments dropped)."""
    block = text.split(after, 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_readme_main_job_runs_on_files_it_makes(tmp_path):
    """Defect 10 of issue 32: the main-job section ran on a placeholder model.onnx. Its commands run
    here in order, each on what the ones before it wrote, and git ignores every file they write."""
    import shlex

    from trtplugins import engine, loader

    try:
        be = engine.backend()
        loader.library_path(be.major)
        builds = True
    except (engine.BuildError, loader.PluginLibraryError):
        builds = False
    try:
        import tensorrt  # noqa: F401

        engine_validated = True
    except ImportError:
        engine_validated = False
    lines = _bash_block((ROOT / "README.md").read_text(), "## The main job")
    assert len(lines) >= 8 and not any("model.onnx" in line for line in lines)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for line in lines:
        args = shlex.split(line)
        assert args[0] == "trtplugins", line
        r = subprocess.run([sys.executable, "-m", "trtplugins", *args[1:]], capture_output=True, text=True, cwd=tmp_path,
                           env=env, timeout=600)
        if args[1] == "build" and not builds:
            assert r.returncode == 2 and r.stderr.startswith("error: "), (line, r.stderr[-2000:])
        elif args[1] == "validate" and "--target" not in args and not engine_validated:
            assert r.returncode == 3 and "NO ENGINE VALIDATED" in r.stdout, (line, r.stdout[-2000:], r.stderr[-2000:])
        else:
            assert r.returncode == 0, (line, r.stdout[-2000:], r.stderr[-2000:])
    made = sorted(p.name for p in tmp_path.iterdir())
    assert {"demo.onnx", "demo.plugins.onnx", "demo.report.json"} <= set(made)
    if builds:
        assert {"demo.plan", "demo.all.plan", "demo.fp16.plan", "demo.summary.json"} <= set(made)
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *made], capture_output=True, text=True, cwd=ROOT)
    assert sorted(ignored.stdout.split()) == made
    assert not subprocess.run(["git", "check-ignore", "-q", "--no-index", "trtplugins-demo/demo.onnx"], cwd=ROOT).returncode


def test_readme_states_the_cpu_torch_size():
    """Defect 10: the README said the CPU torch is ~200 MB installed; it is ~750 MB."""
    torch = pytest.importorskip("torch", reason="needs torch (pip install torch==2.13.0)")
    text = (ROOT / "README.md").read_text()
    stated = int(re.search(r"The CPU torch first \(about (\d+) MB installed", text).group(1))
    folder = Path(torch.__file__).parent
    if "+cpu" not in torch.__version__:
        pytest.skip(f"torch {torch.__version__} is not the CPU build the README speaks of")
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20
    assert 0.8 < size / stated < 1.25, (size, stated)


def test_docs_never_compare_onnx_runtime_with_itself():
    """Defect 10: `--target ort` without `--fp16` compares ONNX Runtime with itself."""
    for doc in ("README.md", "docs/deploy.md"):
        for line in (ROOT / doc).read_text().splitlines():
            if "--target ort" in line and ("validate" in line or "trtplugins" in line):
                assert "--fp16" in line, (doc, line)


def test_triton_steps_put_the_libraries_where_the_config_says():
    """Defect 10: config.pbtxt pointed at /opt/trtplugins/, which nothing created, and deploy.md assumed
    nvcc, headers and tensorrt in the server image. The steps build in the TensorRT container, copy the
    autoreg library and the kernel library it needs beside it, and mount that folder there."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    steps = text.split("## Serving with NVIDIA Triton Inference Server", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    assert "nvcr.io/nvidia/tensorrt:<yy.mm>-py3" in steps and "nvcr.io/nvidia/tritonserver:<yy.mm>-py3" in steps
    assert "pip install ." in steps.split("tritonserver:")[0]  # built in the TensorRT container, not the server's
    assert 'cp "$LIB" "$(dirname "$LIB")/libtrtplugins_kernels.so" examples/triton/plugins/' in steps
    assert '-v "$PWD/examples/triton/plugins":/opt/trtplugins' in steps
    assert "plugins=/opt/trtplugins/libtrtplugins_trt<N>_autoreg.so" in steps
    config = (ROOT / "examples" / "triton" / "model_repository" / "demo" / "config.pbtxt").read_text()
    assert "plugins=/opt/trtplugins/libtrtplugins_trt<N>_autoreg.so" in config and "examples/triton/plugins/" in config
