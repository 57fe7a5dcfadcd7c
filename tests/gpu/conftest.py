"""GPU test fixtures: skip without torch/CUDA, and a summary table of max errors."""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from pathlib import Path

import pytest

_records: list[tuple] = []


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/gpu" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.gpu)


@pytest.fixture(scope="session")
def torch():
    torch = pytest.importorskip("torch", reason="GPU tests need torch (PyTorch built with CUDA)")
    if not torch.cuda.is_available():
        pytest.skip("GPU tests need CUDA: torch.cuda.is_available() is False")
    return torch


@pytest.fixture(scope="module", params=[(m, api) for m in (10, 11) for api in (2, 3)], ids=lambda p: f"trt{p[0]}-v{p[1]}")
def h(request, torch):
    """The C ABI harness (tests/plugin_harness.py) built against each major's headers, creating
    IPluginV2DynamicExt (v2) or IPluginV3 (v3) plugins."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from plugin_harness import Harness, find_harness

    major, api = request.param
    path = find_harness(major)
    if path is None:
        pytest.skip(f"harness for TensorRT {major} not built (needs TensorRT {major} headers)")
    return Harness(path, api)


@pytest.fixture(scope="session")
def host_cost_log() -> Path:
    """Where host-cost measurements are appended: beside the GPU summary."""
    return summary_path().with_name("enqueue_host_us.txt")


@pytest.fixture(scope="session")
def record():
    """record(op, variant, dtype, shape, err, ratio): err = max|out - ref| / scale, ratio = max of
    |out - ref| / bound (must be <= 1)."""

    def add(*row):
        _records.append(row)

    return add


def summary_path() -> Path:
    return Path(os.environ.get("TRTP_GPU_SUMMARY", Path(__file__).resolve().parents[2] / "build" / "gpu_summary.md"))


def pytest_sessionfinish(session, exitstatus):
    if not _records:
        return
    path = summary_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    worst: dict[tuple, tuple] = {}
    shapes = defaultdict(set)
    for op, variant, dtype, shape, err, ratio in _records:
        key = (op, variant, dtype)
        shapes[key].add(shape)
        if key not in worst or ratio > worst[key][1]:
            worst[key] = (max(err, worst.get(key, (0,))[0]), ratio, shape)
        else:
            worst[key] = (max(err, worst[key][0]),) + worst[key][1:]
    lines = [
        "# GPU kernel test summary",
        "",
        "max error = max |out - ref| / max(max|ref|, 1) over every output and shape (ref: the op modules' references",
        "in float64 on the same rounded inputs); err/bound = max |out - ref| / (atol * scale + rtol * |ref|),",
        "<= 1 passes (tolerances: tests/gpu/test_kernels.py).",
        f"{len(_records)} checked launches.",
        "",
        "| op | variant | dtype | shapes | max error | max err/bound | at shape |",
        "|---|---|---|---|---|---|---|",
    ]
    for key in sorted(worst):
        err, ratio, shape = worst[key]
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {len(shapes[key])} | {err:.2e} | {ratio:.3f} | {shape} |")
    path.write_text("\n".join(lines) + "\n")
    with open(path.with_suffix(".csv"), "w") as f:
        f.write("op,variant,dtype,shape,max_err,err_over_bound\n")
        for op, variant, dtype, shape, err, ratio in _records:
            f.write(f"{op},{variant},{dtype},{'x'.join(map(str, shape))},{err:.3e},{ratio:.3f}\n")
