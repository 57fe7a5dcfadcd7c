"""The light default install and the documents that tell users how to install (defect 11)."""
import re
import subprocess
import sys
from pathlib import Path

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
