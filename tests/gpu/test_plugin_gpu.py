"""The plugin adapters on the GPU, driven the way TensorRT drives them:
created by the real creators, configured, initialized, enqueued with real
PluginTensorDesc descriptors (harness built against each major's headers).
Their output must be bit-identical to the bare kernel's and match the numpy
reference; bad descriptors make enqueue return an error, never crash."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from plugin_harness import BF16, FLOAT, HALF, INT32  # noqa: E402

from trtplugins.ops import bias_activation, registry, skip_norm  # noqa: E402

TRT_TYPE = {"float32": FLOAT, "float16": HALF, "bfloat16": BF16}
# Tolerance vs the float64 reference, relative to max(|ref|, 1): FP32 arithmetic
# with erff/expf; FP16/BF16 add one rounding of the output (2^-11 and 2^-8).
TOL = {"float32": 2e-5, "float16": 2e-3, "bfloat16": 1.6e-2}
SHAPES = [(1, 768), (3, 5, 1024), (37, 7), (2, 3, 4096), (1, 16384), (0, 768)]


def tensor(torch, shape, dtype, seed, scale=1.0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return (torch.randn(*shape, generator=g) * scale).to(getattr(torch, dtype)).cuda()


def as_np(t):
    return t.float().cpu().numpy() if str(t.dtype) == "torch.bfloat16" else t.cpu().numpy()


def check_close(out, ref, dtype):
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    scale = max(float(np.abs(ref).max(initial=0.0)), 1.0)
    err = float(np.abs(out - ref).max(initial=0.0)) / scale
    assert np.isfinite(out).all() and err <= TOL[dtype], err
    return err


def run_plugin(torch, p, dtype, inputs, n_out):
    shape = tuple(inputs[0].shape)
    outs = [torch.full_like(inputs[0], float("nan")) for _ in range(n_out)]  # poisoned
    types = [TRT_TYPE[dtype]] * (len(inputs) + n_out)
    shapes = [shape] * (len(inputs) + n_out)
    assert p.configure(types, [(-1,) + shape[1:]] * len(shapes), len(inputs)) == 0  # V3: uploads the weights
    assert p.initialize() == 0  # V2: uploads the weights (V3 has no initialize)
    assert p.shape_change(types, shapes, len(inputs)) == 0  # V3 onShapeChange (V2: configure with real dims)
    stream = torch.cuda.current_stream().cuda_stream
    rc = p.enqueue(types, shapes, [t.data_ptr() for t in inputs], [t.data_ptr() for t in outs], stream)
    torch.cuda.synchronize()
    assert rc == 0
    return outs


@pytest.mark.parametrize("dtype", list(TRT_TYPE))
@pytest.mark.parametrize("activation", ["gelu", "gelu_tanh", "relu6", "silu", "quick_gelu", "hard_swish"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_bias_activation_plugin(h, torch, record, dtype, activation, shape):
    hidden = shape[-1]
    x = tensor(torch, shape, dtype, 1, 3.0)
    bias = np.random.default_rng(2).standard_normal(hidden).astype(np.float32)
    p = h.create_from("BiasActivation", activation=activation, bias=bias)
    (y,) = run_plugin(torch, p, dtype, [x], 1)
    bare = bias_activation.kernel(x, torch.from_numpy(bias).cuda(), activation)
    assert torch.equal(y, bare), "plugin enqueue and bare kernel differ"
    err = check_close(as_np(y), bias_activation.reference(as_np(x), bias, activation), dtype)
    record("plugin:BiasActivation", f"trt{h.major}-v{h.api}:{activation}", dtype, shape, err, err / TOL[dtype])


NORM_CASES = list(itertools.product(["layer", "rms"], [False, True], [False, True]))


@pytest.mark.parametrize("dtype", list(TRT_TYPE))
@pytest.mark.parametrize("norm,with_skip,output_sum", NORM_CASES, ids=lambda v: str(v))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_skip_norm_plugin(h, torch, record, dtype, norm, with_skip, output_sum, shape):
    hidden = shape[-1]
    rng = np.random.default_rng(3)
    gamma, beta, bias = (rng.standard_normal(hidden).astype(np.float32) for _ in range(3))
    x = tensor(torch, shape, dtype, 4, 2.0)
    skip = tensor(torch, shape, dtype, 5)
    inputs = [x, skip] if with_skip else [x]
    p = h.create_from("SkipNorm", norm=norm, gamma=gamma, beta=beta, bias=bias, epsilon=1e-5, output_sum=int(output_sum))
    outs = run_plugin(torch, p, dtype, inputs, 2 if output_sum else 1)
    cu = lambda a: torch.from_numpy(a).cuda()
    bare = skip_norm.kernel(x, skip if with_skip else None, gamma=cu(gamma), beta=cu(beta), bias=cu(bias),
                             norm=norm, epsilon=1e-5, output_sum=output_sum)
    bare = bare if isinstance(bare, tuple) else (bare,)
    assert all(torch.equal(a, b) for a, b in zip(outs, bare)), "plugin enqueue and bare kernel differ"
    ref = skip_norm.reference(as_np(x), as_np(skip) if with_skip else None, gamma=gamma, beta=beta, bias=bias,
                              norm=norm, epsilon=1e-5, output_sum=output_sum)
    ref = ref if isinstance(ref, tuple) else (ref,)
    err = max(check_close(as_np(o), r, dtype) for o, r in zip(outs, ref))
    record("plugin:SkipNorm", f"trt{h.major}-v{h.api}:{norm}{'+skip' if with_skip else ''}{'+sum' if output_sum else ''}",
           dtype, shape, err, err / TOL[dtype])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("norm,with_skip", [("layer", False), ("layer", True), ("rms", False)], ids=str)
def test_skip_norm_plugin_exact_16bit_weights(h, torch, dtype, norm, with_skip):
    """gamma/beta exact in FP16 and BF16 (k / 64): the plugin uploads 16-bit copies and its 16-bit
    launches read them; the output is still bit-identical to the bare kernel's with FP32 weights."""
    shape = (37, 4096)
    gamma = (np.arange(4096) % 64 / 64 + 0.5).astype(np.float32)
    beta = ((np.arange(4096) % 32 - 16) / 64).astype(np.float32)
    x, skip = tensor(torch, shape, dtype, 6, 2.0), tensor(torch, shape, dtype, 7)
    inputs = [x, skip] if with_skip else [x]
    p = h.create_from("SkipNorm", norm=norm, gamma=gamma, beta=beta, epsilon=1e-5)
    (y,) = run_plugin(torch, p, dtype, inputs, 1)
    cu = lambda a: torch.from_numpy(a).cuda()
    v = skip_norm.variant(dtype, norm, with_skip, 4096, io_weights=True, rows=shape[0])  # the plugin's
    bare = skip_norm.kernel(x, skip if with_skip else None, gamma=cu(gamma), beta=cu(beta), norm=norm, epsilon=1e-5,
                             variant=v)
    io = skip_norm.kernel(x, skip if with_skip else None, gamma=cu(gamma), beta=cu(beta), norm=norm, epsilon=1e-5,
                           gamma_io=cu(gamma).to(x.dtype), beta_io=cu(beta).to(x.dtype))
    assert torch.equal(y, bare) and torch.equal(io, bare), "16-bit weights changed the output"


@pytest.mark.parametrize("dtype", list(TRT_TYPE))
def test_skip_norm_plugin_broadcast_skip(h, torch, record, dtype):
    """x [3, 7, 64] + skip [7, 64]: the enqueue reads the skip's own descriptor."""
    x, skip = tensor(torch, (3, 7, 64), dtype, 11, 2.0), tensor(torch, (7, 64), dtype, 12)
    gamma = np.linspace(0.5, 1.5, 64).astype(np.float32)
    p = h.create_from("SkipNorm", norm="layer", gamma=gamma, epsilon=1e-5, output_sum=1)
    y, s = (torch.full_like(x, float("nan")) for _ in range(2))
    types, shapes = [TRT_TYPE[dtype]] * 4, [(3, 7, 64), (7, 64), (3, 7, 64), (3, 7, 64)]
    assert p.configure(types, [(-1, 7, 64), (7, 64), (-1, 7, 64), (-1, 7, 64)], 2) == 0
    assert p.initialize() == 0
    assert p.shape_change(types, shapes, 2) == 0
    rc = p.enqueue(types, shapes, [x.data_ptr(), skip.data_ptr()], [y.data_ptr(), s.data_ptr()],
                   torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    assert rc == 0
    by, bs = skip_norm.kernel(x, skip, gamma=torch.from_numpy(gamma).cuda(), norm="layer", epsilon=1e-5, output_sum=True)
    assert torch.equal(y, by) and torch.equal(s, bs), "plugin enqueue and bare kernel differ"
    ry, rs = skip_norm.reference(as_np(x), np.broadcast_to(as_np(skip), x.shape), gamma=gamma, norm="layer",
                                 epsilon=1e-5, output_sum=True)
    err = max(check_close(as_np(y), ry, dtype), check_close(as_np(s), rs, dtype))
    record("plugin:SkipNorm", f"trt{h.major}-v{h.api}:layer+broadcast skip+sum", dtype, (3, 7, 64), err, err / TOL[dtype])


def test_deserialized_and_cloned_plugins_compute_the_same(h, torch):
    gamma = np.linspace(0.5, 1.5, 1024).astype(np.float32)
    p = h.create_from("SkipNorm", norm="rms", gamma=gamma, epsilon=1e-6)
    x, s = tensor(torch, (9, 1024), "float16", 7), tensor(torch, (9, 1024), "float16", 8)
    (want,) = run_plugin(torch, p, "float16", [x, s], 1)
    clone = p.clone()  # initialized, with its own device weights
    attached = p.attach()  # V3 attachToContext (V2: clone): the per-context plugin
    again = h.deserialize("SkipNorm", p.serialize())  # V3: createPlugin(kRUNTIME) from getFieldsToSerialize
    for q in (clone, attached, again):
        (got,) = run_plugin(torch, q, "float16", [x, s], 1)
        assert torch.equal(got, want)
    del p  # the clone owns its weights
    (got,) = run_plugin(torch, clone, "float16", [x, s], 1)
    assert torch.equal(got, want)


def test_enqueue_rejects_bad_descriptors(h, torch, capfd):
    gamma = np.ones(64, np.float32)
    p = h.create_from("SkipNorm", norm="layer", gamma=gamma)
    x = tensor(torch, (4, 64), "float32", 9)
    y = torch.empty_like(x)
    p.configure([FLOAT, FLOAT], [(4, 64), (4, 64)], 1)
    assert p.initialize() == 0
    stream = torch.cuda.current_stream().cuda_stream
    cases = [
        ([FLOAT, FLOAT], [(4, 63), (4, 63)]),  # hidden != gamma
        ([INT32, INT32], [(4, 64), (4, 64)]),  # unsupported type
        ([FLOAT, HALF], [(4, 64), (4, 64)]),  # mixed types
        ([FLOAT, FLOAT], [(-1, 64), (4, 64)]),  # unknown dim at run time
    ]
    for types, shapes in cases:
        assert p.enqueue(types, shapes, [x.data_ptr()], [y.data_ptr()], stream) != 0, (types, shapes)
    assert capfd.readouterr().err.count("SkipNorm::enqueue") == len(cases)
    # and the plugin still works afterwards
    assert p.enqueue([FLOAT, FLOAT], [(4, 64), (4, 64)], [x.data_ptr()], [y.data_ptr()], stream) == 0
    torch.cuda.synchronize()


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_legacy_gelu_plugin(h, torch, record, dtype):
    """CustomGeluPluginDynamic (TensorRT OSS's, removed in 11.0) on its BERT-sample layout [S, B, E, 1, 1]:
    the BiasActivation kernel's gelu_tanh over E, bit for bit."""
    shape = (7, 2, 768, 1, 1)
    x = tensor(torch, shape, dtype, 8, 3.0)
    bias = np.random.default_rng(9).standard_normal(768).astype(np.float32)
    p = h.create_from("CustomGeluPluginDynamic", type_id=int(dtype == "float16"), bias=bias)
    (y,) = run_plugin(torch, p, dtype, [x], 1)
    bare = bias_activation.kernel(x.view(14, 768), torch.from_numpy(bias).cuda(), "gelu_tanh").view(shape)
    assert torch.equal(y, bare), "plugin enqueue and bare kernel differ"
    ref = registry.run_reference("CustomGeluPluginDynamic", [as_np(x)], {"type_id": 0, "bias": bias})[0]
    err = check_close(as_np(y), ref, dtype)
    record("plugin:CustomGeluPluginDynamic", f"trt{h.major}-v{h.api}", dtype, shape, err, err / TOL[dtype])


HOST_COST = {  # op: (fields, input shapes, outputs)
    "SkipNorm": (dict(norm="layer", gamma=np.ones(4096, np.float32), beta=np.zeros(4096, np.float32)),
                 [(64, 4096), (64, 4096)], 1),
    "BiasActivation": (dict(activation="gelu", bias=np.zeros(4096, np.float32)), [(64, 4096)], 1),
}


@pytest.mark.parametrize("op", list(HOST_COST))
def test_enqueue_host_cost(h, torch, host_cost_log, op):
    """What one enqueue costs the enqueuing thread (no GPU wait), written next to the GPU summary:
    launch only, the kernel variant and its grid having been chosen when configured."""
    fields, shapes, n_out = HOST_COST[op]
    p = h.create_from(op, **fields)
    inputs = [tensor(torch, s, "float16", i) for i, s in enumerate(shapes)]
    outs = [torch.empty_like(inputs[0]) for _ in range(n_out)]
    run_plugin(torch, p, "float16", inputs, n_out)
    types, all_shapes = [HALF] * (len(inputs) + n_out), shapes + [shapes[0]] * n_out
    stream = torch.cuda.current_stream().cuda_stream
    us = p.enqueue_host_us(types, all_shapes, [t.data_ptr() for t in inputs], [t.data_ptr() for t in outs], stream)
    torch.cuda.synchronize()
    assert 0 < us < 1000, us
    with open(host_cost_log, "a") as f:
        f.write(f"{op} trt{h.major} v{h.api} fp16 {shapes}: {us:.2f} us per enqueue (host)\n")
