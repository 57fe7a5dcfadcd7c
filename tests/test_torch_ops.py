"""trtplugins.torch custom ops on the CPU: registered from the op spec, the CPU implementation
against the op modules' references (trtplugins.ops.<op>.reference) within the kernels' tolerances,
fake tensors (torch.compile with fullgraph, torch.export), opcheck, errors, and no backward."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="trtplugins.torch needs torch (pip install torch==2.13.0)")

from gpu.test_kernels import TOL  # noqa: E402  the kernels' stated tolerances

from trtplugins import ops  # noqa: E402
from trtplugins.ops import bias_activation, gated_activation, group_norm, skip_norm  # noqa: E402
from trtplugins.torch import library  # noqa: E402

T = torch.ops.trtplugins
DTYPES = ("float32", "float16", "bfloat16")


def test_every_op_is_registered_from_its_declaration():
    assert [library.op_name(p) for p in library.PLUGINS] == ["bias_activation", "gated_activation", "skip_norm",
                                                             "group_norm"]
    for plugin in library.PLUGINS:
        spec, name = ops.spec(plugin), library.op_name(plugin)
        schema = getattr(T, name).default._schema
        assert [a.name for a in schema.arguments] == [t.name for t in spec.inputs] + [f.name for f in spec.fields]
        for a, f in zip(schema.arguments[len(spec.inputs):], spec.fields):
            assert a.kwarg_only and (a.has_default_value() != f.required)
            assert not a.has_default_value() or a.default_value == f.default
        assert str(schema.returns[0].type) == ("List[Tensor]" if any(t.when for t in spec.outputs) else "Tensor")
        for key in ("CPU", "CUDA", "Meta", "Autograd"):
            assert torch._C._dispatch_has_kernel_for_dispatch_key(f"trtplugins::{name}", key), (name, key)


def _rand(shape, dtype, gen, scale=1.0, shift=0.0):
    return (torch.randn(shape, generator=gen) * scale + shift).to(getattr(torch, dtype))


def _f64(t):
    return None if t is None else t.double().numpy()


def _check(out, ref, dtype, what):
    got = out.double().numpy()
    assert got.shape == ref.shape, what
    atol, rtol = TOL[dtype]
    scale = max(float(np.abs(ref).max()), 1.0)
    ratio = float((np.abs(got - ref) / (atol * scale + rtol * np.abs(ref))).max())
    assert ratio <= 1.0, f"{what}: {ratio:.2f} x the bound"


@pytest.mark.parametrize("dtype", DTYPES)
def test_skip_norm_cpu_matches_reference(dtype):
    gen = torch.Generator().manual_seed(1)
    for norm, skip, beta, bias, out_sum, shape in itertools.product(
            ops.NORMS, (None, "full", "broadcast"), (False, True), (False, True), (0, 1), [(2, 5, 64), (3, 7)]):
        x = _rand(shape, dtype, gen, 2.0, 0.5)
        s = None if skip is None else _rand(shape if skip == "full" else shape[1:], dtype, gen)
        w = {k: _rand(shape[-1:], "float32", gen) for k, on in (("gamma", True), ("beta", beta), ("bias", bias)) if on}
        out = T.skip_norm(x, s, norm=norm, epsilon=1e-5, output_sum=out_sum, **w)
        ref = skip_norm.reference(_f64(x), _f64(s), norm=norm, output_sum=bool(out_sum),
                                  **{k: _f64(v) for k, v in w.items()})
        for o, r in zip(out, ref if out_sum else [ref]):
            _check(o, r, dtype, f"skip_norm {norm} skip={skip} beta={beta} bias={bias} {shape}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_group_norm_cpu_matches_reference(dtype):
    gen = torch.Generator().manual_seed(2)
    for act, skip, bias, out_sum, shape in itertools.product(
            ops.GROUP_NORM_ACTIVATIONS, (None, "full", "per_channel"), (False, True), (0, 1), [(2, 8, 5, 3), (1, 6, 7)]):
        x = _rand(shape, dtype, gen, 2.0, 0.5)
        s = None if skip is None else _rand(shape if skip == "full" else shape[:2] + (1,) * (len(shape) - 2), dtype, gen)
        w = {"gamma": _rand(shape[1:2], "float32", gen), "beta": _rand(shape[1:2], "float16", gen)}
        if bias:
            w["bias"] = _rand(shape[1:2], "float32", gen)
        out = T.group_norm(x, s, num_groups=2, activation=act, output_sum=out_sum, **w)
        ref = group_norm.reference(_f64(x), _f64(s), num_groups=2, activation_name=act, output_sum=bool(out_sum),
                                   **{k: _f64(v) for k, v in w.items()})
        for o, r in zip(out, ref if out_sum else [ref]):
            _check(o, r, dtype, f"group_norm {act} skip={skip} bias={bias} {shape}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_activations_cpu_match_reference(dtype):
    gen = torch.Generator().manual_seed(3)
    x = _rand((3, 4, 16), dtype, gen, 3.0)
    for act, bias in itertools.product(ops.ACTIVATIONS, (None, _rand((16,), "float32", gen))):
        _check(T.bias_activation(x, activation=act, bias=bias),
               bias_activation.reference(_f64(x), _f64(bias), act), dtype, f"bias_activation {act}")
    x2 = _rand((3, 4, 16), dtype, gen, 3.0)
    for act, gate, two, bias in itertools.product(ops.GATED_ACTIVATIONS, ("first", "second"), (False, True),
                                                  (False, True)):
        width = 16 if two else 8
        w = {"gate_bias": _rand((width,), "float32", gen), "linear_bias": _rand((width,), "bfloat16", gen)} if bias \
            else {}
        out = T.gated_activation(x, x2 if two else None, activation=act, gate=gate, **w)
        ref = gated_activation.reference(_f64(x), _f64(x2) if two else None, activation_name=act, gate=gate,
                                         **{k: _f64(v) for k, v in w.items()})
        _check(out, ref, dtype, f"gated_activation {act} {gate} two={two} bias={bias}")


def samples(device="cpu"):
    """(op, args, kwargs) covering each op's forms, for opcheck (tests/gpu/test_torch_gpu.py: on CUDA)."""
    x, g = torch.randn(2, 3, 8, device=device), torch.randn(8, device=device)
    yield T.skip_norm.default, (x, torch.randn(3, 8, device=device)), dict(norm="layer", gamma=g, beta=g.half(),
                                                                           output_sum=1)
    yield T.skip_norm.default, (x.bfloat16(),), dict(norm="rms", gamma=g.bfloat16())
    yield T.group_norm.default, (torch.randn(2, 4, 3, 3, device=device),), dict(
        num_groups=2, gamma=torch.randn(4, device=device), activation="silu", output_sum=1)
    yield T.bias_activation.default, (x.half(),), dict(activation="gelu_tanh", bias=g)
    yield T.gated_activation.default, (x,), dict(activation="gelu", gate="second")
    yield T.gated_activation.default, (x, x + 1), dict(activation="silu", linear_bias=g)
    yield T.bias_activation.default, (x,), dict(activation="identity")  # an output never aliases an input
    yield T.skip_norm.default, (x,), dict(norm="rms", gamma=g, output_sum=1)


def test_opcheck():
    for op, args, kwargs in samples():
        torch.library.opcheck(op, args, kwargs)  # raises on the first failure


def test_fake_tensors_give_the_output_shapes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(4, 6, 32, dtype=torch.float16)
        y, s = T.skip_norm(x, x, norm="rms", gamma=torch.empty(32), output_sum=1)
        assert y.shape == s.shape == x.shape and y.dtype == torch.float16
        assert T.gated_activation(x, activation="silu").shape == (4, 6, 16)
        assert T.gated_activation(x, x, activation="silu").shape == x.shape
        (g,) = T.group_norm(x.reshape(4, 6, 4, 8), num_groups=3, gamma=torch.empty(6))
        assert g.shape == (4, 6, 4, 8)
    meta = T.bias_activation(torch.empty(3, 5, device="meta"), activation="relu")
    assert meta.device.type == "meta" and meta.shape == (3, 5)


X, X4 = (3, 4, 8), (3, 4, 8, 2)


@pytest.mark.parametrize("call, message", [
    (lambda: T.skip_norm(torch.randn(X), norm="nope", gamma=torch.ones(8)), "skip_norm: norm 'nope' is not one of"),
    (lambda: T.skip_norm(torch.randn(X), norm="rms", gamma=torch.ones(7)), "skip_norm: gamma has 7 values; expected 8"),
    (lambda: T.skip_norm(torch.randn(X), torch.ones(2, 8), norm="rms", gamma=torch.ones(8)), "skip_norm: skip (2, 8)"),
    (lambda: T.group_norm(torch.randn(X4), num_groups=3, gamma=torch.ones(4)), "num_groups 3 does not divide the 4"),
    (lambda: T.group_norm(torch.randn(3, 4), num_groups=2, gamma=torch.ones(4)), "group_norm: x (3, 4) must be N, C"),
    (lambda: T.gated_activation(torch.randn(3, 7), activation="silu"), "gated_activation: x (3, 7) has no two halves"),
    (lambda: T.bias_activation(torch.randn(X).double(), activation="relu"), "bias_activation: x is torch.float64"),
    (lambda: T.bias_activation(torch.randn(X), activation="relu", bias=torch.ones(8, dtype=torch.int32)),
     "bias is torch.int32"),
])
def test_bad_arguments_are_refused_naming_the_op(call, message):
    with pytest.raises((ValueError, TypeError), match="^trtplugins::.*" + re.escape(message)):
        call()


def test_no_backward():
    x = torch.randn(3, 8, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^trtplugins::skip_norm has no backward \(inference only\)") as e:
        T.skip_norm(x, norm="rms", gamma=torch.ones(8))
    assert "\n" not in str(e.value)
    with pytest.raises(RuntimeError, match="trtplugins::bias_activation has no backward"):
        T.bias_activation(x.detach(), activation="relu", bias=torch.ones(8, requires_grad=True))
    with torch.no_grad():
        T.skip_norm(x, norm="rms", gamma=torch.ones(8, requires_grad=True))
    with torch.inference_mode():
        T.bias_activation(x, activation="relu")


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(16))

    def forward(self, x):
        h, s = library.skip_norm(x, x, norm="layer", gamma=self.w, output_sum=1)
        h = library.gated_activation(library.bias_activation(h, activation="gelu", bias=self.w), activation="silu")
        return library.group_norm(s.reshape(2, 4, -1), num_groups=2, gamma=self.w[:4], activation="silu"), h


def test_compile_fullgraph_and_export_trace_the_ops():
    m, x = _Block(), torch.randn(2, 3, 16)
    with torch.no_grad():
        want = m(x)
        torch._dynamo.reset()
        got = torch.compile(m, backend="aot_eager", fullgraph=True)(x)  # fullgraph: a graph break raises
        ep = torch.export.export(m, (x,))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert {f"trtplugins.{n}.default" for n in ("skip_norm", "group_norm", "bias_activation",
                                                 "gated_activation")} <= targets
