"""trtplugins.torch on a GPU: the CUDA path (our kernels) against the op modules' references
within the kernel tests' tolerances for FP32/FP16/BF16, FP32 and 16-bit weights (the 16-bit copies
the kernels read, the FP32 copies kept per weight and refreshed when it changes), CUDA-graph
capture, opcheck on CUDA, torch.compile(fullgraph=True) with Inductor, and fused tiny models
against the unfused ones."""

from __future__ import annotations

import copy
import itertools
import sys
import zlib
from pathlib import Path

import pytest

from trtplugins import ops
from trtplugins.ops import bias_activation, gated_activation, group_norm, skip_norm

from .test_kernels import DTYPES, check, f64, tdtype

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _ops(torch):
    import trtplugins.torch  # noqa: F401  registers the ops

    return torch.ops.trtplugins


def _rand(torch, gen, shape, dtype, scale=1.0, shift=0.0):
    return (torch.randn(shape, generator=gen, device="cuda") * scale + shift).to(dtype)


def _w64(w):
    return None if w is None else f64(w)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_skip_norm_cuda(torch, record, dtype):
    T, dt = _ops(torch), tdtype(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"torch-skip{dtype}".encode()))
    for norm, skip, wdt, extra, out_sum, shape in itertools.product(
            ops.NORMS, (None, "full", "broadcast"), (torch.float32, dt), (False, True), (0, 1),
            [(1, 768), (37, 1024), (2, 64, 4096), (3, 5121)]):
        x = _rand(torch, gen, shape, dt, 2.0, 0.5)
        s = None if skip is None else _rand(torch, gen, shape if skip == "full" else shape[-2:], dt)
        w = {"gamma": _rand(torch, gen, shape[-1:], wdt)}
        if extra:
            w.update(beta=_rand(torch, gen, shape[-1:], wdt), bias=_rand(torch, gen, shape[-1:], torch.float32))
        out = T.skip_norm(x, s, norm=norm, epsilon=1e-5, output_sum=out_sum, **w)
        ref = skip_norm.reference(f64(x), None if s is None else f64(s), norm=norm, output_sum=bool(out_sum),
                                  **{k: _w64(v) for k, v in w.items()})
        variant = f"torch {norm}{'+' + skip if skip else ''}{'+beta+bias' if extra else ''} w:{str(wdt)[6:]}"
        for o, r in zip(out, ref if out_sum else [ref]):
            check(record, "torch.skip_norm", variant, dtype, shape, o, r)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_group_norm_cuda(torch, record, dtype):
    T, dt = _ops(torch), tdtype(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"torch-gn{dtype}".encode()))
    for act, skip, wdt, bias, shape in itertools.product(
            ops.GROUP_NORM_ACTIVATIONS, (None, "full", "per_channel"), (torch.float32, dt), (False, True),
            [(1, 320, 64, 64), (2, 64, 9, 7), (2, 1280, 8, 8)]):
        x = _rand(torch, gen, shape, dt, 2.0, 0.5)
        s = None if skip is None else _rand(torch, gen, shape if skip == "full" else shape[:2] + (1, 1), dt)
        w = {"gamma": _rand(torch, gen, shape[1:2], wdt), "beta": _rand(torch, gen, shape[1:2], wdt)}
        if bias:
            w["bias"] = _rand(torch, gen, shape[1:2], torch.float32)
        (out,) = T.group_norm(x, s, num_groups=32 if shape[1] % 32 == 0 else 8, activation=act, **w)
        ref = group_norm.reference(f64(x), None if s is None else f64(s), num_groups=32 if shape[1] % 32 == 0 else 8,
                                   activation_name=act, **{k: _w64(v) for k, v in w.items()})
        check(record, "torch.group_norm", f"torch {act}{'+' + skip if skip else ''} w:{str(wdt)[6:]}", dtype, shape,
              out, ref)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_activations_cuda(torch, record, dtype):
    T, dt = _ops(torch), tdtype(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(f"torch-act{dtype}".encode()))
    for shape in [(3, 768), (2, 77, 4096), (5, 1001)]:
        x = _rand(torch, gen, shape, dt, 3.0)
        for act, bias in itertools.product(ops.ACTIVATIONS, (None, _rand(torch, gen, shape[-1:], dt))):
            out = T.bias_activation(x, activation=act, bias=bias)
            check(record, "torch.bias_activation", f"torch {act}", dtype, shape, out,
                  bias_activation.reference(f64(x), _w64(bias), act))
        if shape[-1] % 2 == 0:
            for act, gate in itertools.product(ops.GATED_ACTIVATIONS, ("first", "second")):
                out = T.gated_activation(x, activation=act, gate=gate)
                check(record, "torch.gated_activation", f"torch {act} {gate}", dtype, shape, out,
                      gated_activation.reference(f64(x), activation_name=act, gate=gate))


@pytest.mark.gpu
def test_fp32_weight_copies_follow_the_weight(torch):
    """A 16-bit weight's FP32 copy is made once and made again after an in-place change or a new
    storage; an FP32 weight is used as it is and the cache keeps no reference to it."""
    import gc
    import weakref

    from trtplugins.torch import _kernels

    T = _ops(torch)
    x, w = torch.randn(8, 256, device="cuda", dtype=torch.float16), torch.randn(256, device="cuda").half()
    a = T.skip_norm(x, norm="rms", gamma=w)[0]
    first = _kernels._weights[id(w)].w32
    assert T.skip_norm(x, norm="rms", gamma=w)[0].equal(a) and _kernels._weights[id(w)].w32 is first
    with torch.no_grad():
        w.mul_(2)
    torch.testing.assert_close(T.skip_norm(x, norm="rms", gamma=w)[0], 2 * a, rtol=2e-3, atol=2e-3)
    assert _kernels._weights[id(w)].w32 is not first
    w.data = 3 * w.data  # a new storage, the version counter unchanged
    torch.testing.assert_close(T.skip_norm(x, norm="rms", gamma=w)[0], 6 * a, rtol=4e-3, atol=4e-3)
    w32 = torch.randn(256, device="cuda")
    y = T.skip_norm(x, norm="rms", gamma=w32)[0]
    torch.testing.assert_close(y.float(), T.skip_norm(x, norm="rms", gamma=w32.half())[0].float(), rtol=2e-3, atol=2e-3)
    gone, key = weakref.ref(w32), id(w32)
    del w32
    gc.collect()
    assert gone() is None and key not in _kernels._weights


def _block(torch):
    from torch import nn

    import trtplugins.torch as tt

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln, self.gn, self.act = nn.LayerNorm(256), nn.GroupNorm(8, 32), nn.SiLU()
            self.w = nn.Parameter(torch.randn(256))

        def forward(self, x, img):
            h = tt.bias_activation(self.ln(x), activation="gelu", bias=self.w)
            h = tt.gated_activation(torch.cat([h, h], -1), activation="silu")
            y, s = tt.skip_norm(h, x, norm="rms", gamma=self.w, output_sum=1)
            g = self.gn(img)
            g = self.act(g)
            return y, s, g

    return Block


@pytest.mark.gpu
def test_eager_calls_past_the_dispatcher_equal_it(torch):
    """trtplugins.torch.<op> in eager goes straight to the CUDA implementation: the same outputs, bit
    for bit, as torch.ops.trtplugins.<op>; a call that needs a gradient still raises the op's error.
    Weights change in place between calls (their FP32 copies follow)."""
    import trtplugins.torch as tt

    T = _ops(torch)
    gen = torch.Generator(device="cuda").manual_seed(5)
    x, w = _rand(torch, gen, (2, 32, 6, 5), torch.float16), _rand(torch, gen, (32,), torch.float32)
    h, hw = _rand(torch, gen, (3, 7, 96), torch.bfloat16), _rand(torch, gen, (96,), torch.bfloat16)
    with torch.inference_mode():
        assert tt.group_norm(x, num_groups=8, gamma=w, beta=w, activation="silu").equal(
            T.group_norm(x, num_groups=8, gamma=w, beta=w, activation="silu")[0])
        y, s = tt.skip_norm(h, h, gamma=hw, norm="rms", output_sum=1)
        want = T.skip_norm(h, h, gamma=hw, norm="rms", output_sum=1)
        assert y.equal(want[0]) and s.equal(want[1])
        for _ in range(3):  # the signature's first call is checked, the later ones prepared: the same
            hw.mul_(-1)  # an FP32 copy follows its weight's changes
            assert tt.skip_norm(h, gamma=hw, norm="rms").equal(T.skip_norm(h, gamma=hw, norm="rms")[0])
            w.mul_(0.5)
            assert tt.group_norm(x, num_groups=8, gamma=w, beta=w).equal(T.group_norm(x, num_groups=8, gamma=w, beta=w)[0])
            ht, xl = h.transpose(0, 1), x.contiguous(memory_format=torch.channels_last)  # not contiguous
            assert tt.skip_norm(ht, gamma=hw, norm="rms").equal(T.skip_norm(ht.contiguous(), gamma=hw, norm="rms")[0])
            assert tt.group_norm(xl, num_groups=8, gamma=w).equal(T.group_norm(x, num_groups=8, gamma=w)[0])
            for args, gb in (((h,), hw[:48]), ((h, h.flip(0)), hw)):  # one tensor's halves, two tensors
                assert tt.gated_activation(*args, activation="gelu", gate="second", gate_bias=gb).equal(
                    T.gated_activation(*args, activation="gelu", gate="second", gate_bias=gb))
    with pytest.raises(RuntimeError, match="trtplugins::skip_norm has no backward"):
        tt.skip_norm(h, gamma=hw.clone().requires_grad_(), norm="rms")
    with pytest.raises(ValueError, match="gamma must be 96 float32 values"):
        tt.skip_norm(h, gamma=hw[:95], norm="rms")


@pytest.mark.gpu
@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_cuda_graph_capture(torch, warm):
    """The ops captured in a CUDA graph and replayed on new inputs equal eager; cold: the 16-bit
    weights' FP32 copies are first made inside the capture."""
    import trtplugins.torch as tt

    torch.manual_seed(0)
    model = _block(torch)().cuda().half().eval()
    tt.fuse(model)
    x, img = torch.randn(4, 16, 256, device="cuda").half(), torch.randn(2, 32, 16, 16, device="cuda").half()
    with torch.inference_mode():
        if warm:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                model(x, img)
            torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            outs = model(x, img)
        for _ in range(3):
            x.copy_(torch.randn_like(x))
            img.copy_(torch.randn_like(img))
            graph.replay()
            want = model(x, img)
            for o, w in zip(outs, want):
                assert o.equal(w)


@pytest.mark.gpu
def test_opcheck_cuda(torch):
    _ops(torch)
    from test_torch_ops import samples

    for op, args, kwargs in samples("cuda"):
        torch.library.opcheck(op, args, kwargs)


@pytest.mark.gpu
@pytest.mark.parametrize("under_compile", ["torch", "trtplugins"])
def test_compile_fullgraph_inductor(torch, under_compile):
    import trtplugins.torch as tt

    torch.manual_seed(0)
    model = _block(torch)().cuda().half().eval()
    tt.fuse(model, under_compile=under_compile)
    x, img = torch.randn(4, 16, 256, device="cuda").half(), torch.randn(2, 32, 16, 16, device="cuda").half()
    with torch.inference_mode():
        want = model(x, img)
        torch._dynamo.reset()
        got = torch.compile(model, fullgraph=True)(x, img)  # a graph break raises
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=2e-3, atol=2e-3)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_fused_models_cuda(torch, dtype):
    """Tiny LLaMA and UNet (tests/test_torch_models.py's configs) on the GPU: fused == unfused."""
    pytest.importorskip("diffusers", reason="the UNet needs diffusers (.whl/, see benchmarks/run_torch_gpu.sh)")
    import torch_models as tm

    import trtplugins.torch as tt

    dt = getattr(torch, dtype)
    bound = 3e-2 if dtype == "float16" else 1e-1  # whole models: errors of many 16-bit layers add up
    cases = [(tm.llama(), (torch.randint(0, 100, (2, 33)),)), (tm.unet(), tm.UNET_ARGS)]
    for model, args in cases:
        model = model.cuda().to(dt)
        args = tuple(a.cuda().to(dt) if a.is_floating_point() else a.cuda() for a in args)
        fused = copy.deepcopy(model)
        report = tt.fuse(fused)
        assert report.replaced and not report.left
        with torch.inference_mode():
            want, got = model(*args)[0].float(), fused(*args)[0].float()
        err = ((got - want).abs().max() / want.abs().max().clamp_min(1)).item()
        assert err <= bound, f"{type(model).__name__} {dtype}: {err:.3g}"
