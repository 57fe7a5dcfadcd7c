"""trtplugins.torch's C++ launches (_cpp.py, csrc/launch.cpp) on a CPU machine: the source compiles against
this torch's headers, CUDA's and the kernel library's own C declarations (kernels.h: a signature changed there
fails here, not at a user's build), and use_cpp() refuses without CUDA in one line. Built and run on the GPU:
tests/gpu/test_torch_cpp.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="trtplugins.torch needs torch (pip install torch==2.13.0)")

from trtplugins.torch import _cpp  # noqa: E402


def _cuda_include() -> Path | None:
    from torch.utils import cpp_extension

    roots = [cpp_extension.CUDA_HOME] + [str(Path(p).resolve().parents[1]) for p in [shutil.which("nvcc")] if p]
    roots += sorted(map(str, Path("/usr/local").glob("cuda*")), reverse=True)
    return next((Path(r) / "include" for r in roots if r and (Path(r) / "include" / "cuda_runtime_api.h").is_file()),
                None)


def test_launch_source_compiles_against_torch_and_the_c_entries(tmp_path):
    from torch.utils import cpp_extension

    gxx, cuda = shutil.which("g++"), _cuda_include()
    if gxx is None or cuda is None:
        pytest.skip(f"compiling needs g++ and CUDA's headers (found g++ {gxx}, cuda_runtime_api.h in {cuda})")
    includes = [*cpp_extension.include_paths(), str(cuda), str(_cpp.header_dir()), sysconfig.get_paths()["include"]]
    generated = "c10/cuda/impl/cuda_cmake_macros.h"  # written by torch's CUDA builds only: a CPU wheel lacks it
    if not any((Path(i) / generated).is_file() for i in includes):
        (tmp_path / generated).parent.mkdir(parents=True)
        (tmp_path / generated).write_text("#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n")
        includes.append(str(tmp_path))
    cmd = [gxx, "-std=c++20", "-fsyntax-only", "-Wall", "-Werror=return-type", f"-DTORCH_EXTENSION_NAME={_cpp.NAME}",
           *(f"-I{i}" for i in includes), str(_cpp.SOURCE)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert not [line for line in out.stderr.splitlines() if str(_cpp.SOURCE) in line and "warning" in line], out.stderr


def test_use_cpp_needs_cuda_and_says_so(monkeypatch):
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: tests/gpu/test_torch_cpp.py builds the launches")
    with pytest.raises(RuntimeError, match=r"^trtplugins.torch.use_cpp: needs torch with CUDA and a GPU$"):
        _cpp.use_cpp()
    assert _cpp.ext is None
    monkeypatch.setenv(_cpp.ENV_VAR, "1")
    with pytest.warns(RuntimeWarning, match="needs torch with CUDA"):
        _cpp.from_env()
    assert _cpp.header_dir() == Path(_cpp.__file__).resolve().parents[2] / "plugin_src" / "capi"
    assert sys.modules["trtplugins.torch"].use_cpp is _cpp.use_cpp


def _declared(fn: str) -> list[str]:
    """The parameter names of launch.cpp's function fn, snake_case, as the modules pass them."""
    import re

    params = re.search(rf"py::object {fn}\(([^)]*)\)", _cpp.SOURCE.read_text()).group(1)
    names = [p.split()[-1].rstrip("_") for p in params.replace("\n", " ").split(",")]
    return [re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), n) for n in names]


class _Launches:
    """launch.cpp's three functions with their declared parameters, computing with the op's CPU implementation:
    what the fused modules pass them (order, ids, flags) must give the op's own results."""

    def __init__(self):
        from trtplugins.ops import gated_activation, group_norm, skip_norm

        self.names = {"norm": {v: k for k, v in skip_norm.NORM_IDS.items()},
                      "act": {v: k for k, v in group_norm.ACTIVATION_IDS.items()},
                      "gated": {v: k for k, v in gated_activation.ACTIVATION_IDS.items()},
                      "gate": {v: k for k, v in gated_activation.GATE_IDS.items()}}
        self.calls = 0

    def skip_norm(self, x, skip, gamma, beta, bias, norm, epsilon, output_sum):
        self.calls += 1
        out = torch.ops.trtplugins.skip_norm(x, skip, gamma=gamma, beta=beta, bias=bias, norm=self.names["norm"][norm],
                                             epsilon=epsilon, output_sum=int(output_sum))
        return tuple(out) if output_sum else out[0]

    def group_norm(self, x, skip, groups, gamma, beta, bias, act, epsilon, output_sum):
        self.calls += 1
        out = torch.ops.trtplugins.group_norm(x, skip, num_groups=groups, gamma=gamma, beta=beta, bias=bias,
                                              activation=self.names["act"][act], epsilon=epsilon,
                                              output_sum=int(output_sum))
        return tuple(out) if output_sum else out[0]

    def gated_activation(self, x, x2, gate_bias, linear_bias, act, gate):
        self.calls += 1
        return torch.ops.trtplugins.gated_activation(x, x2, gate_bias=gate_bias, linear_bias=linear_bias,
                                                     activation=self.names["gated"][act], gate=self.names["gate"][gate])


def test_modules_call_the_launches_as_launch_cpp_declares_them():
    import inspect

    from torch import nn

    import trtplugins.torch as tt

    launches = _Launches()
    for py, cpp in (("skip_norm", "skipNorm"), ("group_norm", "groupNorm"), ("gated_activation", "gatedActivation")):
        assert list(inspect.signature(getattr(launches, py)).parameters) == _declared(cpp)
    g = torch.Generator().manual_seed(0)
    x, img = torch.randn(2, 5, 16, generator=g), torch.randn(2, 8, 3, 3, generator=g)
    ln, rms, gn = nn.LayerNorm(16), nn.RMSNorm(16, eps=1e-5), nn.GroupNorm(4, 8)
    for m in (ln, rms, gn):
        with torch.no_grad():
            for p in m.parameters():
                p.copy_(torch.randn(p.shape, generator=g))
    calls = [(tt.FusedLayerNorm.from_module(ln), lambda m: m(x, skip=x.flip(0), output_sum=True)),
             (tt.FusedRMSNorm.from_module(rms), lambda m: m(x, skip=x[:1])),
             (tt.FusedGroupNorm.from_module(gn, "silu"), lambda m: m(img, skip=img[:, :, :1, :1].clone(),
                                                                    output_sum=True)),
             (tt.FusedGatedLinear(nn.Linear(16, 32), "gelu_tanh"), lambda m: m(x)),
             (tt.FusedActivation(nn.SiLU(), "silu"), lambda m: m(x, gated=x.flip(0)))]
    with torch.no_grad():
        for module, call in calls:
            _cpp.ext = None
            want = call(module)
            _cpp.ext, before = launches, launches.calls
            try:
                got = call(module)
            finally:
                _cpp.ext = None
            assert launches.calls == before + 1, type(module).__name__
            for a, b in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
                torch.testing.assert_close(a, b, rtol=0, atol=0)
