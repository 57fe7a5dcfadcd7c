"""trtplugins.torch on real model code built from configs (random weights, no downloads): the
drop-in modules, fuse() on HF LLaMA-family models and a diffusers UNet (outputs equal to the
unfused model, the report), the ONNX export as plugin nodes validated on the CPU against the
unfused model (trtplugins.graph.evaluate), and a TensorRT-RTX build of the export."""

from __future__ import annotations

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="trtplugins.torch needs torch (pip install torch==2.13.0)")
tf = pytest.importorskip("transformers", reason="the HF models need transformers")
diffusers = pytest.importorskip("diffusers", reason="the UNet needs diffusers (pip install diffusers)")

from torch import nn  # noqa: E402

from trtplugins import ops  # noqa: E402
from trtplugins.graph import evaluate  # noqa: E402
from trtplugins.torch import (FusedActivation, FusedGatedLinear, FusedGroupNorm, FusedLayerNorm,  # noqa: E402
                              FusedRMSNorm, export, fuse)

from torch_models import UNET_ARGS, llama, randomize, unet  # noqa: E402

FP32 = dict(atol=1e-5, rtol=1e-5)  # tests/gpu/test_kernels.py's FP32 bound, on the models' outputs


def test_modules_match_torch_and_share_parameters():
    x, img = torch.randn(3, 5, 16), torch.randn(2, 8, 4, 4)
    cases = [(nn.LayerNorm(16), FusedLayerNorm, x), (nn.LayerNorm(16, bias=False), FusedLayerNorm, x),
             (nn.LayerNorm(16, elementwise_affine=False), FusedLayerNorm, x), (nn.RMSNorm(16), FusedRMSNorm, x),
             (nn.RMSNorm(16, eps=1e-3), FusedRMSNorm, x), (nn.GroupNorm(4, 8), FusedGroupNorm, img),
             (nn.GroupNorm(2, 8, affine=False), FusedGroupNorm, img), (nn.GroupNorm(4, 8), FusedGroupNorm, img[:, :, 0, 0])]
    with torch.no_grad():
        for m, cls, inp in cases:
            randomize(m)
            fused = cls.from_module(m)
            assert fused.weight is m.weight and fused.state_dict().keys() == m.state_dict().keys()
            torch.testing.assert_close(fused(inp), m(inp), **FP32)
        gn = randomize(nn.GroupNorm(4, 8))
        torch.testing.assert_close(FusedGroupNorm.from_module(gn, "silu")(img), nn.functional.silu(gn(img)), **FP32)
        torch.testing.assert_close(FusedGroupNorm.from_module(gn)(img, activation="silu"), nn.functional.silu(gn(img)))
    with pytest.raises(ValueError, match="last dim only"):
        FusedLayerNorm((4, 16))


def test_fuse_llama_replaces_every_rmsnorm():
    model, ids = llama(), torch.randint(0, 100, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = model(ids).last_hidden_state
        report = fuse(model)
        got = model(ids).last_hidden_state
    assert report.counts() == {"LlamaRMSNorm -> FusedRMSNorm": 5, "SiLUActivation -> FusedActivation": 2}
    assert not report.left and report.products_folded() == 2  # the MLPs' act_fn(gate_proj(x)) * up_proj(x)
    assert report.replaced[-1]["gated"] == ["LlamaMLP.forward line %d: self.act_fn(...) * ..." % _line(
        type(model.layers[0].mlp).forward, "self.act_fn(self.gate_proj(x)) * self.up_proj(x)")]
    assert isinstance(model.layers[1].post_attention_layernorm, FusedRMSNorm)
    assert isinstance(model.layers[1].mlp.act_fn, FusedActivation) and "forward" in vars(model.layers[1].mlp)
    # each layer's `hidden_states = residual + hidden_states; residual = hidden_states` before its second norm
    site = _line(type(model.layers[0]).forward, "hidden_states = self.post_attention_layernorm(hidden_states)")
    assert report.skip_folded() == 2 and all(r.get("skip") == [
        f"LlamaDecoderLayer.forward line {site}: skip=residual, output_sum"] for r in report.replaced
        if r["module"].endswith("post_attention_layernorm"))
    assert model.norm.eps == 1e-6
    torch.testing.assert_close(got, want, **FP32)
    assert fuse(model).counts() == {}  # a second call finds nothing left to do


@pytest.mark.parametrize("kind", ["t5", "qwen2", "mistral", "gemma", "bert"])
def test_fuse_recognizes_rmsnorm_by_behaviour(kind):
    small = dict(num_hidden_layers=1, num_attention_heads=4, vocab_size=100)
    cls, cfg = {
        "t5": (tf.T5EncoderModel, tf.T5Config(d_model=32, d_kv=8, d_ff=64, num_layers=1, num_heads=4, vocab_size=100)),
        "qwen2": (tf.Qwen2Model, tf.Qwen2Config(hidden_size=32, intermediate_size=64, num_key_value_heads=2, **small)),
        "mistral": (tf.MistralModel, tf.MistralConfig(hidden_size=32, intermediate_size=64, num_key_value_heads=2,
                                                       **small)),
        "gemma": (tf.GemmaModel, tf.GemmaConfig(hidden_size=32, intermediate_size=64, num_key_value_heads=2, head_dim=8,
                                                 **small)),
        "bert": (tf.BertModel, tf.BertConfig(hidden_size=32, intermediate_size=64, **small)),
    }[kind]
    torch.manual_seed(0)
    model = randomize(cls(cfg))
    ids = torch.randint(0, 100, (2, 7), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        want = model(input_ids=ids).last_hidden_state
        report = fuse(model)
        got = model(input_ids=ids).last_hidden_state
    torch.testing.assert_close(got, want, **FP32)
    norms = [r for r in report.replaced if r["to"] != "FusedActivation"]
    acts = {r["activation"] for r in report.replaced if r["to"] == "FusedActivation"}  # the MLP's act(gate) * up
    assert acts == {"qwen2": {"silu"}, "mistral": {"silu"}, "gemma": {"gelu_tanh"}}.get(kind, set())
    if kind == "gemma":  # x / rms(x) * (1 + weight): left, and why
        assert not norms and len(report.left) == 3
        assert all("probe: not x / sqrt(mean(x^2) + 1e-06) * weight" in r["reason"] for r in report.left)
    else:
        assert len(norms) == 3 and not report.left
        assert all(r["to"] == ("FusedLayerNorm" if kind == "bert" else "FusedRMSNorm") for r in norms)
    # the adds each norm's input is made of: BERT's post-norm `self.LayerNorm(hidden_states + input_tensor)` and
    # its embeddings' sum (skip broadcast over the batch); the residual stream before the second norm elsewhere
    folded = {r["module"].rsplit(".", 1)[-1]: r["skip"][0].rsplit(": ", 1)[1] for r in norms if r.get("skip")}
    assert folded == {"bert": {"LayerNorm": "skip=input_tensor"}, "t5": {}, "gemma": {}}.get(
        kind, {"post_attention_layernorm": "skip=residual, output_sum"})
    if kind == "bert":
        assert sorted(r["module"] for r in norms if r.get("skip")) == [
            "embeddings.LayerNorm", "encoder.layer.0.attention.output.LayerNorm", "encoder.layer.0.output.LayerNorm"]
        assert norms[0]["skip"][0].endswith("skip=position_embeddings")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_fused_norms_take_a_skip_and_give_the_sum(dtype):
    """norm(x + skip) as one kernel call, the sum as a second output; a skip the op cannot take (another dtype,
    a broadcast other than over x's leading dims) added first. Bounds: the kernels' (tests/gpu/test_kernels.py)."""
    dt = getattr(torch, dtype)
    tol = {"float32": FP32, "float16": dict(atol=2e-3, rtol=2e-3), "bfloat16": dict(atol=1.6e-2, rtol=1.6e-2)}[dtype]
    g = torch.Generator().manual_seed(0)
    x, img = torch.randn(2, 5, 16, generator=g).to(dt), torch.randn(2, 8, 3, 3, generator=g).to(dt)
    ln, rms, gn = randomize(nn.LayerNorm(16)).to(dt), randomize(nn.RMSNorm(16, eps=1e-5)).to(dt), randomize(
        nn.GroupNorm(4, 8)).to(dt)
    cases = [(ln, FusedLayerNorm.from_module(ln), x, [x.clone(), x[:1, :1].clone(), x[0].clone()]),
             (rms, FusedRMSNorm.from_module(rms), x, [x.clone(), x[:1].clone()]),
             (gn, FusedGroupNorm.from_module(gn), img, [img.clone(), img[:, :, :1, :1].clone()])]
    with torch.no_grad():
        for m, fused, inp, skips in cases:
            added_first = [skips[0].float(), inp[:, :1].clone()]  # another dtype, a broadcast the op does not take
            for skip in skips + added_first:
                want_sum = inp + skip
                y, s = fused(inp, skip=skip, output_sum=True)
                torch.testing.assert_close(y, copy.deepcopy(m).to(want_sum.dtype)(want_sum), **tol)
                torch.testing.assert_close(s, want_sum, **tol)
                assert s.shape == want_sum.shape and s.dtype == want_sum.dtype
                torch.testing.assert_close(fused(inp, skip=skip), y, rtol=0, atol=0)
            y, s = fused(inp, output_sum=True)  # no skip: the sum is x itself
            assert s is inp and torch.equal(y, fused(inp))


def test_fuse_unet_folds_the_silu_where_the_block_shows_it():
    model = unet()
    with torch.no_grad():
        want = model(*UNET_ARGS).sample
        report = fuse(model)
        got = model(*UNET_ARGS).sample
    torch.testing.assert_close(got, want, **FP32)
    groups = [n for n, m in model.named_modules() if isinstance(m, FusedGroupNorm)]
    assert report.counts() == {"GroupNorm -> FusedGroupNorm": len(groups), "LayerNorm -> FusedLayerNorm": 12,
                               "GEGLU -> FusedGatedLinear": 4}
    assert not any(isinstance(m, (nn.GroupNorm, nn.LayerNorm)) for m in model.modules())
    assert all(r["activation"] == "gelu" and r["gate"] == "second" for r in report.replaced if "gate" in r)
    resnets = [m for m in model.modules() if type(m).__name__ == "ResnetBlock2D"]
    folded = {r["module"]: r["silu"] for r in report.replaced if "silu" in r}
    assert len(folded) == 2 * len(resnets) + 1 == report.silu_folded() - len(resnets)  # norm2: two branches
    assert folded["conv_norm_out"] == ["UNet2DConditionModel.forward line %d: self.conv_act" % _line(
        type(model).forward, "sample = self.conv_norm_out(sample)")]
    assert all(isinstance(r.nonlinearity, nn.SiLU) for r in resnets)  # still there: the time embedding uses it
    skips = {r["module"]: r["skip"] for r in report.replaced if "skip" in r}  # the time embedding added before norm2
    assert report.skip_folded() == len(skips) == len(resnets)
    assert all(v == ["ResnetBlock2D.forward line %d: skip=temb" % _line(
        type(resnets[0]).forward, "hidden_states = self.norm2(hidden_states)")] for v in skips.values())
    assert not report.left


def _line(fn, text: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(inspect.unwrap(fn))
    return first + next(i for i, line in enumerate(lines) if text in line)


class _Residual(nn.Module):
    """The SiLU's input is read again after it: folding it would change the result."""

    def __init__(self):
        super().__init__()
        self.norm, self.act, self.norm2 = nn.GroupNorm(2, 4), nn.SiLU(), nn.GroupNorm(2, 4)

    def forward(self, x):
        h = self.norm(x)
        y = self.act(h)
        x = self.norm2(x)
        return y + h + self.act(x + 1)


def test_fuse_leaves_a_silu_whose_input_is_used_elsewhere():
    model, x = randomize(_Residual()), torch.randn(2, 4, 3, 3)
    with torch.no_grad():
        want = model(x)
        report = fuse(model)
        got = model(x)
    torch.testing.assert_close(got, want, **FP32)
    assert report.silu_folded() == 0 and "forward" not in vars(model)
    assert {r["module"] for r in report.left} == {"norm", "norm2"}
    assert all("no `h = self.norm" in r["reason"] for r in report.left)


class _AddThenNorm(nn.Module):
    """An add before each GroupNorm: a full skip, one [1, C, 1, 1] the op cannot take, a float."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.GroupNorm(2, 4), nn.GroupNorm(2, 4), nn.GroupNorm(2, 4)
        self.bias = nn.Parameter(torch.randn(1, 4, 1, 1))

    def forward(self, x, t):
        h = x + t
        h = self.a(h)
        b = self.bias
        h = b + h
        h = self.b(h)
        f = 0.5
        h = f + h
        h = self.c(h)
        return h


def test_fuse_folds_an_add_into_the_group_norm_skip():
    model, x, t = randomize(_AddThenNorm()), torch.randn(2, 4, 3, 3), torch.randn(2, 4, 3, 3)
    with torch.no_grad():
        want = model(x, t)
        report = fuse(model)
        got = model(x, t)
    torch.testing.assert_close(got, want, **FP32)
    assert report.skip_folded() == 3 and "folded      3 x an add into the norm after it (its skip input)" in str(report)
    assert {r["module"]: r["skip"][0].rsplit(": ", 1)[1] for r in report.replaced} == {
        "a": "skip=t", "b": "skip=b", "c": "skip=f"}
    assert not report.left
    unfolded = randomize(_AddThenNorm())
    assert fuse(unfolded, skip=False).skip_folded() == 0 and "forward" not in vars(unfolded)


class _GatedFirst(nn.Module):
    """relu(first half) * second half of a projection without bias; named like a gated unit."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(12, 10, bias=False)

    def forward(self, x):
        g, a = self.lin(x).chunk(2, -1)
        return torch.relu(g) * a


class _TwoLinearGLU(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(6, 4), nn.Linear(6, 4)

    def forward(self, x):
        return self.a(x) * torch.sigmoid(self.b(x))


class _NotGLU(nn.Module):
    """One projection, but its halves added: a gated unit's name and parts, not its behaviour."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 8)

    def forward(self, x):
        a, g = self.proj(x).chunk(2, -1)
        return a + g


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_fuse_replaces_gated_units_by_behaviour(dtype):
    """diffusers' GEGLU and SwiGLU and a module of one's own, each found by a probe (activation, which
    half is gated); modules named like one that are not, left with why. Outputs: the FP32 bound, and for
    16-bit the kernels' bounds (tests/gpu/test_kernels.py: FP16 2e-3, BF16 1.6e-2, abs + rel)."""
    from diffusers.models import activations

    dt = getattr(torch, dtype)
    torch.manual_seed(0)
    model = nn.Sequential(activations.GEGLU(12, 16), nn.Linear(16, 12), activations.SwiGLU(12, 8), nn.Linear(8, 12),
                          type("MyGLU", (_GatedFirst,), {})(), nn.Linear(5, 6), type("PairGLU", (_TwoLinearGLU,), {})(),
                          type("SumGLU", (_NotGLU,), {})()).to(dt)
    x = torch.randn(3, 7, 12).to(dt)
    with torch.no_grad():
        want = model(x)
        report = fuse(model)
        got = model(x)
    bound = {"float32": FP32, "float16": dict(atol=2e-3, rtol=2e-3), "bfloat16": dict(atol=1.6e-2, rtol=1.6e-2)}
    torch.testing.assert_close(got, want, **bound[dtype])
    assert [(r["module"], r["from"], r["activation"], r["gate"]) for r in report.replaced] == [
        ("0", "GEGLU", "gelu", "second"), ("2", "SwiGLU", "silu", "second"), ("4", "MyGLU", "relu", "first")]
    assert isinstance(model[0], FusedGatedLinear) and model[0].proj.weight.dtype == dt
    assert {r["module"]: r["reason"] for r in report.left} == {
        "6": "no fused op for it (a gated unit here holds one nn.Linear and parameterless activations)",
        "7": "probe: not a * act(g) of its projection's halves for act in silu, gelu, gelu_tanh, relu"}
    assert fuse(model).counts() == {}
    kept = nn.Sequential(activations.GEGLU(12, 16))
    assert fuse(kept, gated=False).counts() == {} and type(kept[0]).__name__ == "GEGLU"
    with pytest.raises(ValueError, match="odd count has no two halves"):
        FusedGatedLinear(nn.Linear(4, 5), "gelu")


class _Products(nn.Module):
    """Products with an activation on either side, one whose other operand is broadcast, one with a module
    that is no gated activation (Tanh) and a plain call of the same activation."""

    def __init__(self):
        super().__init__()
        self.act, self.gelu, self.tanh = nn.SiLU(), nn.GELU(approximate="tanh"), nn.Tanh()

    def forward(self, x, w):
        a = self.act(x) * w
        b = w * self.gelu(x)
        c = self.act(x) * w[:1]
        return a + b + c + self.tanh(x) * w + self.act(w)


def test_fuse_folds_a_product_into_the_activation():
    model, x, w = _Products(), torch.randn(3, 8), torch.randn(3, 8)
    with torch.no_grad():
        want = model(x, w)
        report = fuse(model)
        got = model(x, w)
    torch.testing.assert_close(got, want, **FP32)
    assert {r["module"]: (r["activation"], len(r["gated"])) for r in report.replaced} == {
        "act": ("silu", 2), "gelu": ("gelu_tanh", 1)}
    assert "folded      3 x a product into the activation before it" in str(report)
    assert type(model.tanh) is nn.Tanh and isinstance(model.act, FusedActivation)
    kept = _Products()
    assert fuse(kept, gated=False).products_folded() == 0 and "forward" not in vars(kept)
    with torch.no_grad():  # a dtype the op does not take: the product as before
        torch.testing.assert_close(model.double()(x.double(), w.double()), want.double(), **FP32)
    with pytest.raises(ValueError, match="expected one of silu, gelu, gelu_tanh, relu"):
        FusedActivation(nn.Tanh(), "tanh")


class _RefusingRMSNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(8)), 1e-6

    def forward(self, x):
        raise RuntimeError("refused\nsecond line")


class _RefusingGLU(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 8)

    def forward(self, x):
        raise KeyError("k")


def test_fuse_says_why_a_module_could_not_be_probed():
    """A probe the module refuses, and a weight on the meta device: left, with the reason's first line;
    the probe's hook is gone."""
    model = nn.Sequential(_RefusingRMSNorm(), type("RefusingGLU", (_RefusingGLU,), {})())
    assert [r["reason"] for r in fuse(model).left] == ["probe failed: RuntimeError: refused",
                                                      "probe failed: KeyError: 'k'"]
    assert not model[1].proj._forward_hooks
    with torch.device("meta"):
        meta = nn.Sequential(_RefusingRMSNorm(), type("RefusingGLU", (_RefusingGLU,), {})())
    assert [r["reason"] for r in fuse(meta).left] == ["cannot probe a torch.float32 weight on meta"] * 2


def test_fused_models_compile_with_fullgraph():
    for model, args in ((llama(1), (torch.randint(0, 100, (1, 6)),)), (unet(), UNET_ARGS)):
        with torch.no_grad():
            fuse(model)
            want = model(*args)[0]
            torch._dynamo.reset()
            got = torch.compile(model, backend="eager", fullgraph=True)(*args)[0]  # a graph break raises
        torch.testing.assert_close(got, want)


def _compiled_and_exported(model, args):
    """The ops torch.compile traces from model (its output checked against eager) and those
    torch.export traces."""
    seen = []

    def backend(gm, example_inputs):
        seen.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return gm.forward

    with torch.no_grad():
        want = model(*args)[0]
        torch._dynamo.reset()
        got = torch.compile(model, backend=backend, fullgraph=True)(*args)[0]
        exported = {str(n.target) for n in torch.export.export(model, args).graph.nodes if n.op == "call_function"}
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    return seen, exported


@pytest.mark.parametrize("under_compile", ["torch", "trtplugins"])
def test_under_compile_picks_the_ops_the_compiler_sees(under_compile):
    """fuse(model, under_compile=...): torch's own norm ops in the compiled graph (Inductor fuses them),
    or our op; an export traces our op either way."""
    model, args = unet(), UNET_ARGS
    fuse(model, under_compile=under_compile)
    seen, exported = _compiled_and_exported(model, args)
    ours = [t for t in seen if "trtplugins" in t]
    assert (len(ours) > 0) == (under_compile == "trtplugins"), ours
    norms = ("group_norm", "layer_norm") if under_compile == "torch" else ("group_norm", "skip_norm")
    assert all(any(n in t for t in seen) for n in norms), seen
    assert {"trtplugins.group_norm.default", "trtplugins.skip_norm.default"} <= exported
    with pytest.raises(ValueError, match="under_compile must be one of torch, trtplugins"):
        fuse(unet(), under_compile="inductor")


def test_under_compile_goes_by_the_flag_torch_export_sets(monkeypatch):
    """Before torch 2.14, dynamo answers torch.compiler.is_exporting() with True under torch.compile too
    (pytorch/pytorch#176347; the GPU machine's torch 2.11 ran our op inside compiled UNets): a module
    asks the flag torch.export sets instead."""
    from trtplugins.torch.modules import _compiled

    m = FusedGroupNorm(2, 4)
    monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    monkeypatch.setattr(torch.compiler, "is_exporting", lambda: True)  # as those versions' dynamo answers
    assert _compiled(m)  # compiling, not exporting: torch's ops
    monkeypatch.setattr(torch.compiler, "_is_exporting_flag", True)
    assert not _compiled(m)  # exporting: our op
    m.under_compile = "trtplugins"
    monkeypatch.setattr(torch.compiler, "_is_exporting_flag", False)
    assert not _compiled(m)


def _plugin_nodes(model):
    return [n for n in model.graph.node if n.domain == ops.DOMAIN]


def _validate(exported, reference_model, args, names):
    """The export on the CPU (plugin nodes by their op modules' references) against the unfused torch model."""
    got = list(evaluate(exported, {n: a.numpy() for n, a in zip(names, args)}).values())[0]
    with torch.no_grad():
        want = reference_model(*args)[0]
    np.testing.assert_allclose(got, want.numpy(), atol=1e-4, rtol=1e-4)


def test_export_llama_dynamo_as_plugin_nodes(tmp_path):
    model, ids = llama(), torch.randint(0, 100, (2, 9), generator=torch.Generator().manual_seed(0))
    unfused = copy.deepcopy(model)
    fuse(model)
    onnx_model = export(model, (ids,), tmp_path / "llama.onnx", input_names=["ids"])
    nodes = _plugin_nodes(onnx_model)
    assert sorted(n.op_type for n in nodes) == ["GatedActivation"] * 2 + ["SkipNorm"] * 5
    norms = [n for n in nodes if n.op_type == "SkipNorm"]
    for n in norms:
        attrs = {a.name: a for a in n.attribute}
        assert attrs["norm"].s == b"rms" and attrs["gamma"].t.dims == [64]
        assert attrs["plugin_version"].s == ops.V3_VERSION.encode() and abs(attrs["epsilon"].f - 1e-6) < 1e-12
        # each layer's residual add before its second norm is the node's skip, the sum its second output
        residual = len(n.input) == 2
        assert len(n.output) == 1 + residual and (attrs["output_sum"].i if "output_sum" in attrs else 0) == residual
    assert sum(len(n.input) == 2 for n in norms) == 2
    assert (tmp_path / "llama.onnx").is_file()
    _validate(onnx_model, unfused, (ids,), ["ids"])
    v1 = export(model, (ids,), plugin_version=ops.V2_VERSION, input_names=["ids"])
    assert {a.s for n in _plugin_nodes(v1) for a in n.attribute if a.name == "plugin_version"} == {b"1"}


@pytest.mark.parametrize("dynamo", [True, False], ids=["dynamo", "torchscript"])
def test_export_unet_as_plugin_nodes_and_build_with_tensorrt_rtx(tmp_path, dynamo):
    rtx = pytest.importorskip("trtplugins.engine.rtx")
    model = unet()
    unfused = copy.deepcopy(model)
    report = fuse(model)
    names = ["sample", "timestep", "encoder_hidden_states"]
    onnx_model = export(model, UNET_ARGS, dynamo=dynamo, input_names=names)
    nodes = _plugin_nodes(onnx_model)
    counts = {p: sum(n.op_type == p for n in nodes) for p in ("GroupNorm", "SkipNorm", "GatedActivation")}
    assert counts == {"GroupNorm": report.counts()["GroupNorm -> FusedGroupNorm"], "SkipNorm": 12, "GatedActivation": 4}
    silu = [n for n in nodes if any(a.name == "activation" and a.s == b"silu" for a in n.attribute)]
    assert len(silu) == sum("silu" in r for r in report.replaced)  # each norm runs one of its folded call sites
    assert not [n for n in onnx_model.graph.node if n.op_type in ("InstanceNormalization", "GroupNormalization",
                                                                  "LayerNormalization")]
    _validate(onnx_model, unfused, UNET_ARGS, names)
    try:
        rtx.rtx_module()
        rtx._plugin_library(None)
    except rtx.RtxBuildError as e:
        pytest.skip(f"TensorRT-RTX not installed or no plugin library: {e}")
    summary = rtx.build_engine(onnx_model, tmp_path / "unet.plan")
    assert sorted(summary["plugin_layers"]) == sorted(n.name for n in nodes)
    assert summary["layers"]["PLUGIN_V3"] == len(nodes)
