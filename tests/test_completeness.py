"""Every op of the schema has what an op needs, in the order docs/adding-an-op.md walks through:
its folder (kernel, declaration, registration), its V2 and V3 creators, its Python module
(reference, patterns or why none, kernel binding), its sanitizer case, GPU test, benchmark point,
torch op and README row. The test fails with the list of what is missing."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from trtplugins import ops
from trtplugins.ops import registry

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "plugin_src"


def _why_not(path: Path, name: str) -> dict[str, str]:
    """{plugin: why} of the dict `name = {ops.X: "why", ...}` in path, read as text."""
    block = path.read_text().split(f"{name} = {{", 1)[1].split("}", 1)[0]
    return {getattr(ops, c): why for c, why in re.findall(r'ops\.(\w+): "([^"]+)"', block)}


def _bench_plugins() -> tuple[set[str], dict[str, str]]:
    """(plugins scripts/bench_kernels.py times, {plugin: why not}): bench_ops.py's PLUGIN_OF and NOT_BENCHED."""
    path = ROOT / "scripts" / "bench_ops.py"
    timed = set(re.findall(r'"\w+": ops\.(\w+)', path.read_text().split("PLUGIN_OF = {", 1)[1].split("}", 1)[0]))
    return {getattr(ops, c) for c in timed}, _why_not(path, "NOT_BENCHED")


def missing(op: str, harnesses) -> list[str]:
    mod = registry.MODULES.get(op)
    if mod is None:
        return ["its module trtplugins/ops/<op>.py, registered in trtplugins/ops/registry.py"]
    folder = mod.__name__.rsplit(".", 1)[1]
    kernel = getattr(mod, "KERNEL", folder)
    out = []
    for path, what in ((SRC / "ops" / kernel / f"{kernel}.cu", "kernel"),
                       (SRC / "ops" / folder / f"{folder}_op.h", "declaration"),
                       (SRC / "ops" / folder / f"{folder}_op.cpp", "declaration source")):
        if not path.is_file():
            out.append(f"{what} {path.relative_to(ROOT)}")
    if f'#include "{folder}/{folder}_op.h"' not in (SRC / "ops" / "all_ops.h").read_text():
        out.append("its line in plugin_src/ops/all_ops.h")
    fields, _ = mod.EXAMPLE if hasattr(mod, "EXAMPLE") else ({}, [])
    for h in harnesses:
        if h.create_from_or_none(op, **fields) is None:
            out.append(f"its V{h.api} creator (TensorRT {h.major})")
    if not hasattr(mod, "EXAMPLE"):
        out.append("EXAMPLE (fields and input shapes) in its module")
    for name in ("reference", "node_reference", "kernel", "PATTERNS"):
        if not hasattr(mod, name):
            out.append(f"{name} in {mod.__name__}")
    if not getattr(mod, "PATTERNS", ()) and not getattr(mod, "NO_PATTERN", ""):
        out.append(f"a pattern, or NO_PATTERN saying why none, in {mod.__name__}")
    if f'#include "../ops/{kernel}/{kernel}.h"' not in (SRC / "tests" / "kernel_sanitize.cu").read_text():
        out.append("its kernel's case in plugin_src/tests/kernel_sanitize.cu")
    gpu = [p for p in (ROOT / "tests" / "gpu").glob("test_*.py") if p.name != "test_kernel_entry_gpu.py"]
    if not any(op in p.read_text() or f"ops import {folder}" in p.read_text() for p in gpu):
        out.append("a GPU test in tests/gpu naming it")
    timed, skipped = _bench_plugins()
    if op not in timed and op not in skipped:
        out.append("a benchmark point in scripts/bench_ops.py (PLUGIN_OF), or NOT_BENCHED saying why")
    torch = ROOT / "trtplugins" / "torch"
    if op not in _why_not(torch / "library.py", "NOT_IN_TORCH") and not all(
            f"\ndef {folder}(" in (torch / f).read_text() for f in ("cpu.py", "_kernels.py")):
        out.append(f"its torch op: {folder}() in trtplugins/torch/cpu.py and _kernels.py, or NOT_IN_TORCH in "
                   "trtplugins/torch/library.py saying why")
    if not re.search(rf"^\| `{re.escape(op)}`", (ROOT / "README.md").read_text(), re.M):
        out.append("its row in the README's table of plugins")
    return out


@pytest.fixture(scope="module")
def harnesses():
    sys.path.insert(0, str(ROOT / "tests"))
    from plugin_harness import Harness, find_harness

    found = [(m, find_harness(m)) for m in (10, 11)]
    if not all(p for _, p in found):
        pytest.skip("harnesses not built (needs nvcc and TensorRT headers)")
    return [Harness(p, api) for _, p in found for api in (2, 3)]


def test_every_op_has_everything(harnesses):
    report = {op: missing(op, harnesses) for op in ops.OPS}
    lacking = {op: parts for op, parts in report.items() if parts}
    assert not lacking, "\n".join(f"{op} lacks: " + "; ".join(parts) for op, parts in lacking.items())


def test_a_new_op_is_told_everything_it_lacks(harnesses):
    assert len(missing("NewOp", harnesses)) == 1  # no module: nothing else can be looked up
    assert set(registry.MODULES) == set(ops.OPS)


def test_an_unknown_op_is_evaluated_as_none_other():
    """reference evaluation dispatches on the op's module: an unknown op raises, never falls to another."""
    import numpy as np

    with pytest.raises(KeyError, match="unknown plugin 'Nope'"):
        registry.run_reference("Nope", [np.zeros((2, 4), np.float32)], {})
