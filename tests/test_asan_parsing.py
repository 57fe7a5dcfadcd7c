"""Blob and field parsing under AddressSanitizer: every truncation, every
corrupted byte and malformed field collections are rejected without one
out-of-bounds read. Uses the harness built with -DTRTPLUGINS_ASAN=ON in
build-asan/ (.ci/run builds it), run in its own process with libasan preloaded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: raw CMake reads the roots from -DTRTPLUGINS_TENSORRT_ROOTS (or TENSORRT_ROOT), not from the environment
ASAN_BUILD = ("cmake -S plugin_src -B build-asan -DTRTPLUGINS_ASAN=ON -DTRTPLUGINS_CUDA_ARCHS=90-real "
              "-DTRTPLUGINS_TENSORRT_ROOTS='<TensorRT 10 root>;<TensorRT 11 root>' && cmake --build build-asan "
              "--target trtplugins_trt10_harness trtplugins_trt11_harness")

SCRIPT = r"""
import sys
import numpy as np
sys.path.insert(0, {tests!r})
from plugin_harness import Harness, PF_CHAR, PF_FLOAT32, PF_FLOAT16, PF_INT32
h = Harness({lib!r})
p = h.create_from("SkipNorm", norm="rms", gamma=np.ones(5, np.float32), beta=np.ones(5, np.float16), output_sum=1)
blob = p.serialize()
rejected = 0
for n in range(len(blob)):
    assert h.deserialize("SkipNorm", blob[:n]) is None; rejected += 1
for i in range(len(blob)):
    for flip in (1, 0x80, 0xFF):
        bad = bytearray(blob); bad[i] ^= flip
        assert h.deserialize("SkipNorm", bytes(bad)) is None; rejected += 1
assert h.deserialize("SkipNorm", blob).serialize() == blob
b = h.create_from("BiasActivation", activation="gelu", bias=np.arange(3, dtype=np.float32)).serialize()
assert h.deserialize("SkipNorm", b) is None and h.deserialize("BiasActivation", b[:-4]) is None
g = h.create_from("GatedActivation", activation="gelu", gate="second", gate_bias=np.ones(3, np.float32),
                  linear_bias=np.ones(3, np.float16)).serialize()
for n in range(len(g)):
    assert h.deserialize("GatedActivation", g[:n]) is None; rejected += 1
assert h.deserialize("GatedActivation", g).serialize() == g
chars = lambda s: np.frombuffer(s, np.int8)
for fields in [
    [("norm", PF_CHAR, chars(b"layer"))],                         # no NUL, gamma missing
    [("norm", PF_CHAR, chars(b"r")), ("gamma", PF_FLOAT32, np.ones(1, np.float32))],
    [("norm", PF_CHAR, chars(b"rms\0")), ("gamma", PF_FLOAT16, np.ones(3, np.float16)), ("epsilon", PF_INT32, np.ones(1, np.int32))],
    [("norm", PF_CHAR, chars(b"rms\0")), ("gamma", PF_FLOAT16, np.ones(3, np.float16)), ("output_sum", PF_INT32, np.ones(2, np.int32))],
]:
    assert h.create("SkipNorm", fields) is None; rejected += 1
    assert h.with_api(3).create("SkipNorm", fields) is None; rejected += 1  # the V3 creator parses the same way
h3 = h.with_api(3)
fields3 = h3.create_from("SkipNorm", norm="rms", gamma=np.ones(5, np.float32), beta=np.ones(5, np.float16)).serialize()
assert h3.deserialize("SkipNorm", fields3).serialize() == fields3
print("rejected", rejected)
"""


@pytest.mark.parametrize("major", [10, 11])
def test_parsing_has_no_out_of_bounds_reads(major):
    lib = ROOT / "build-asan" / f"libtrtplugins_trt{major}_harness.so"
    if not lib.is_file():
        pytest.skip(f"{lib} not built: {ASAN_BUILD} (.ci/run does)")
    asan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    if not os.path.isabs(asan):
        pytest.skip("libasan (gcc's AddressSanitizer runtime) not found")
    stdcxx = subprocess.run(["gcc", "-print-file-name=libstdc++.so"], capture_output=True, text=True).stdout.strip()
    # libstdc++ preloaded too, so ASan can intercept __cxa_throw (python itself does not link it)
    env = dict(os.environ, LD_PRELOAD=f"{asan} {stdcxx}", ASAN_OPTIONS="detect_leaks=0", PYTHONMALLOC="malloc", PYTHONPATH=str(ROOT))
    code = SCRIPT.format(tests=str(ROOT / "tests"), lib=str(lib))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert "AddressSanitizer" not in r.stderr, r.stderr[-4000:]
    assert r.returncode == 0, r.stderr[-4000:]
    assert "rejected" in r.stdout and int(r.stdout.split()[-1]) > 300


def test_skip_hint_configures_the_harness(tmp_path):
    """Defect 7: the hint's CMake command must configure the harness targets (raw CMake reads the
    roots from -DTRTPLUGINS_TENSORRT_ROOTS, not from the environment). Configured here, not built."""
    import shutil

    from test_build_example import ROOTS

    if not shutil.which("cmake") or not shutil.which("nvcc"):
        pytest.skip("cmake or nvcc not found (needed to configure the native build)")
    missing = [r for r in ROOTS if not (Path(r) / "include" / "NvInfer.h").is_file()]
    if missing:
        pytest.skip(f"TensorRT headers not found under {', '.join(missing)} (TRTPLUGINS_TENSORRT_ROOTS)")
    cmd = ASAN_BUILD.split(" && ")[0].replace("build-asan", str(tmp_path / "b"), 1)
    cmd = cmd.replace("<TensorRT 10 root>;<TensorRT 11 root>", ";".join(ROOTS))
    env = {k: v for k, v in os.environ.items() if k not in ("TENSORRT_ROOT", "TRTPLUGINS_TENSORRT_ROOTS")}
    r = subprocess.run(cmd, shell=True, cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    targets = subprocess.run(["cmake", "--build", str(tmp_path / "b"), "--target", "help"], capture_output=True,
                             text=True, timeout=60).stdout
    assert "trtplugins_trt10_harness" in targets and "trtplugins_trt11_harness" in targets
