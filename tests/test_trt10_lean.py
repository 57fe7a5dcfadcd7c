"""The registry tests again, under the real TensorRT 10.16 lean runtime.

TensorRT 10 and 11 lean wheels share a distribution name, so 10.16 lives in
its own virtual environment; .ci/run creates it and sets TRTPLUGINS_TRT10_PYTHON.
"""

import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def test_registry_suite_under_tensorrt_10():
    python = os.environ.get("TRTPLUGINS_TRT10_PYTHON")
    if not python:
        pytest.skip("TensorRT 10.16 lean runtime not provided (set TRTPLUGINS_TRT10_PYTHON to a python with "
                    "tensorrt-lean-cu13-bindings==10.16.1.11; .ci/run does)")
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    r = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HERE / "test_native_registry.py")],
                       capture_output=True, text=True, env=env, timeout=600)
    print(r.stdout[-3000:])
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " passed" in r.stdout and "skipped" not in r.stdout.splitlines()[-1], r.stdout.splitlines()[-1]
