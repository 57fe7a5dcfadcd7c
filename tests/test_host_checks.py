"""Host-side checks of the plugin layer in C++ (plugin_src/tests/host_checks.cpp), no GPU
and no TensorRT library needed: a copied FieldNames owns its fields; many threads clone,
configure, initialize (shared source), serialize, deserialize, create and enqueue
concurrently (V2 and V3: clone / attachToContext, getFieldsToSerialize -> createPlugin), once in the normal build and once under ThreadSanitizer (build-tsan/, which
.ci/run builds for TensorRT 11 with one narrow CUDA architecture)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from trtplugins.loader import find_library

ROOT = Path(__file__).resolve().parents[1]


def _program(major: int) -> Path:
    path = find_library(f"trtplugins_trt{major}_host_checks")[0]
    if path is None:
        pytest.skip(f"trtplugins_trt{major}_host_checks not built (needs nvcc and TensorRT {major} headers)")
    return path


def _run(program: Path, *checks: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(program), *checks], capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.parametrize("major", [10, 11])
def test_host_checks(major):
    r = _run(_program(major), "fieldnames", "threads")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok fieldnames" in r.stdout and "ok threads" in r.stdout


def test_concurrent_plugin_calls_under_thread_sanitizer():
    program = ROOT / "build-tsan" / "trtplugins_trt11_host_checks"
    if not program.is_file():
        pytest.skip(f"{program} not built (cmake -S plugin_src -B build-tsan -DTRTPLUGINS_TSAN=ON; .ci/run does)")
    env = dict(os.environ, TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1")
    r = _run(program, "threads", env=env)
    assert "ThreadSanitizer" not in r.stderr, r.stderr[-6000:]
    assert r.returncode == 0, r.stdout + r.stderr[-3000:]
    ops = int(r.stdout.split()[-1])
    assert ops >= 8 * 150 * (8 + 6)
