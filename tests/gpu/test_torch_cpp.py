"""trtplugins.torch's C++ launches (use_cpp(): csrc/launch.cpp built against this torch) on a GPU: the fused
modules' outputs through them equal the Python launches' bit for bit (every op, FP32/FP16/BF16, FP32 and 16-bit
weights, skips like x, broadcast and per channel, the sum), weights changed in place followed, calls that are
not theirs handed back (None), CUDA-graph capture, and fused tiny models."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@pytest.fixture(scope="module")
def cpp(torch):
    from trtplugins.torch import _cpp, use_cpp

    ext = use_cpp()  # this machine has a compiler, ninja and CUDA's headers: a failure to build fails
    _cpp.ext = None
    yield ext
    _cpp.ext = None


def _both(cpp, fn):
    """fn() through the Python launches, then through the C++ ones."""
    from trtplugins.torch import _cpp

    _cpp.ext = None
    want = fn()
    _cpp.ext = cpp
    try:
        return want, fn()
    finally:
        _cpp.ext = None


def _equal(got, want):
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    assert len(got) == len(want) and all(g.dtype == w.dtype and g.shape == w.shape and g.equal(w)
                                         for g, w in zip(got, want))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_cpp_launches_equal_the_python_ones(torch, cpp, dtype):
    from torch import nn

    import trtplugins.torch as tt

    dt = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(0)

    def r(*shape):
        return torch.randn(*shape, generator=gen, device="cuda").to(dt)

    x, img, h = r(3, 7, 64), r(2, 64, 5, 5), r(3, 7, 96)
    ln, rms, gn = nn.LayerNorm(64), nn.RMSNorm(64, eps=1e-5), nn.GroupNorm(8, 64)
    for m in (ln, rms, gn):
        with torch.no_grad():
            for p in m.parameters():
                p.copy_(torch.randn(p.shape, generator=gen, device="cuda").cpu())
    cases = []
    for wdt in (torch.float32, dt):  # FP32 weights, then the model's dtype (the kernels' 16-bit copies)
        cases += [(tt.FusedLayerNorm.from_module(copy.deepcopy(ln).cuda().to(wdt)), x, [None, x.flip(0), x[:1], x[0]]),
                  (tt.FusedRMSNorm.from_module(copy.deepcopy(rms).cuda().to(wdt)), x, [None, x.flip(0)]),
                  (tt.FusedGroupNorm.from_module(copy.deepcopy(gn).cuda().to(wdt), "silu"), img,
                   [None, img.flip(0), img[:, :, :1, :1].contiguous()])]
    lin = nn.Linear(96, 96).cuda().to(dt)
    with torch.inference_mode():
        for m, inp, skips in cases:
            for skip in skips:
                for output_sum in (False, True):
                    _equal(*_both(cpp, lambda: m(inp, skip=skip, output_sum=output_sum)))
            m.weight.add_(0.5)  # in place: the FP32 copies follow (version counter)
            _equal(*_both(cpp, lambda: m(inp)))
        _equal(*_both(cpp, lambda: tt.FusedGatedLinear(lin, "gelu")(h)))
        act = tt.FusedActivation(nn.SiLU(), "silu")
        _equal(*_both(cpp, lambda: act(x, gated=x.flip(0))))
        # calls the C++ hands back to the op: CPU tensors, another dtype's skip, a shape form it does not take
        w = torch.ones(64, device="cuda", dtype=dt)
        assert cpp.skip_norm(x.cpu(), None, w.cpu(), None, None, 0, 1e-5, False) is None
        assert cpp.skip_norm(x, x.float() if dt != torch.float32 else x.half(), w, None, None, 0, 1e-5, False) is None
        assert cpp.skip_norm(x, x[:, :1], w, None, None, 0, 1e-5, False) is None  # (3, 1, 64): not over leading dims
        assert cpp.group_norm(img, img[:1], 8, w, None, None, 0, 1e-5, False) is None
        assert cpp.gated_activation(h[..., :95], None, None, None, 0, 0) is None
    with torch.enable_grad():  # a gradient asked for: the op's error
        assert cpp.skip_norm(x, None, w.clone().requires_grad_(), None, None, 0, 1e-5, False) is None


@pytest.mark.gpu
def test_cpp_launches_in_a_cuda_graph_and_in_models(torch, cpp):
    """A fused block captured in a CUDA graph through the C++ launches (weight copies made inside the capture)
    replays equal to eager; the fused tiny LLaMA and UNet give the Python launches' outputs bit for bit."""
    pytest.importorskip("diffusers", reason="the UNet needs diffusers (.whl/, see benchmarks/run_torch_gpu.sh)")
    import torch_models as tm

    import trtplugins.torch as tt
    from trtplugins.torch import _cpp

    block = torch.nn.Sequential(torch.nn.GroupNorm(8, 32), torch.nn.SiLU()).cuda().half().eval()
    tt.fuse(block)
    img = torch.randn(2, 32, 16, 16, device="cuda").half()
    _cpp.ext = cpp
    try:
        with torch.inference_mode():
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out = block(img)
            for _ in range(2):
                img.copy_(torch.randn_like(img))
                graph.replay()
                assert out.equal(block(img))
    finally:
        _cpp.ext = None
    for model, args in ((tm.llama(), (torch.randint(0, 100, (2, 33)),)), (tm.unet(), tm.UNET_ARGS)):
        model = model.cuda().half()
        args = tuple(a.cuda().half() if a.is_floating_point() else a.cuda() for a in args)
        tt.fuse(model)
        with torch.inference_mode():
            want, got = _both(cpp, lambda: model(*args)[0])
        assert got.equal(want), type(model).__name__
