"""GroupNorm substitution (issue 16 item 1): a small UNet-style block exported by the
TorchScript and dynamo exporters (Reshape + InstanceNormalization at opsets 14-18, the
GroupNormalization op at 21), the decomposed form and the opset-18/21 op built with
onnx.helper; the SiLU after, the per-channel bias, the time-embedding broadcast Add and the
residual Add (its sum as a second output) folded in; counts and ONNX Runtime equality."""

import numpy as np
import onnx
import pytest
from conftest import compare, plugin_attrs, plugin_nodes
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from trtplugins.ops import group_norm
from trtplugins.graph import substitute

torch = pytest.importorskip("torch", reason="the exports need torch (CPU build)")
nn, F = torch.nn, torch.nn.functional
RNG = np.random.default_rng(0)


class ResBlock(nn.Module):
    """The Stable-Diffusion ResNet block: GN+SiLU, conv, + time embedding, GN+SiLU, conv, + skip."""

    def __init__(self, c_in, c_out, temb=8, groups=4):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(groups, c_in), nn.Conv2d(c_in, c_out, 3, padding=1)
        self.temb = nn.Linear(temb, c_out)
        self.norm2, self.conv2 = nn.GroupNorm(groups, c_out, eps=1e-6), nn.Conv2d(c_out, c_out, 3, padding=1)
        self.skip = nn.Conv2d(c_in, c_out, 1) if c_in != c_out else nn.Identity()
        for norm in (self.norm1, self.norm2):  # weights that are not ones/zeros
            nn.init.normal_(norm.weight, 1.0, 0.3)
            nn.init.normal_(norm.bias, 0.0, 0.3)

    def forward(self, x, t):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(F.silu(t))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return self.skip(x) + h


class TinyUNet(nn.Module):
    """Two ResNet blocks and the output norm: 5 GroupNorms, all followed by SiLU."""

    def __init__(self):
        super().__init__()
        self.b1, self.b2 = ResBlock(8, 16), ResBlock(16, 16)
        self.norm_out, self.conv_out = nn.GroupNorm(8, 16), nn.Conv2d(16, 4, 3, padding=1)

    def forward(self, x, t):
        return self.conv_out(F.silu(self.norm_out(self.b2(self.b1(x, t), t))))


def export(module, args, path, dynamo, opset, dynamic=False):
    torch.manual_seed(0)
    kw = {}
    if dynamic and not dynamo:
        kw = {"input_names": ["x", "t"], "dynamic_axes": {"x": {0: "batch"}, "t": {0: "batch"}}}
    torch.onnx.export(module.eval(), args, str(path), dynamo=dynamo, opset_version=opset, **kw)
    return onnx.load(str(path))


EXPORTS = [(14, False), (17, False), (18, True), (21, True)]


@pytest.mark.parametrize("opset,dynamo", EXPORTS, ids=["ts14", "ts17", "dynamo18", "dynamo21"])
def test_unet_block_exports(tmp_path, opset, dynamo):
    torch.manual_seed(0)
    model = export(TinyUNet(), (torch.randn(2, 8, 6, 6), torch.randn(2, 8)), tmp_path / "m.onnx", dynamo, opset)
    out, report = substitute(model)
    nodes = plugin_nodes(out, "GroupNorm")
    assert len(nodes) == 5, str(report)
    variants = sorted(r["variant"] for r in report.replaced if r["plugin"] == "GroupNorm")
    # b1.norm1 reads x; b1.norm2 / b2.norm2 the time embedding; b2.norm1 b1's residual sum, which b2's
    # residual reads too (second output); norm_out b2's residual sum
    expected = ["group+silu", "group+silu+skip", "group+silu+skip(per-channel)", "group+silu+skip(per-channel)",
                "group+silu+skip+sum"]
    assert variants == expected, variants
    ops_left = {n.op_type for n in out.graph.node}
    assert not ops_left & {"InstanceNormalization", "GroupNormalization", "Sigmoid", "ReduceMean"}, ops_left
    groups = sorted(plugin_attrs(n)["num_groups"] for n in nodes)
    assert groups == [4, 4, 4, 4, 8] and all(plugin_attrs(n)["activation"] == "silu" for n in nodes)
    eps = sorted(round(float(plugin_attrs(n)["epsilon"]), 9) for n in nodes)
    assert eps == [1e-6, 1e-6, 1e-5, 1e-5, 1e-5]
    assert compare(model, out, [()], rtol=1e-4, atol=1e-4) > 0  # CPU evaluator (plugin nodes by the reference) vs ORT


def test_dynamic_batch_torchscript(tmp_path):
    torch.manual_seed(0)
    model = export(ResBlock(8, 8, groups=2), (torch.randn(2, 8, 5, 7), torch.randn(2, 8)), tmp_path / "m.onnx",
                   False, 17, dynamic=True)
    out, report = substitute(model)
    assert len(plugin_nodes(out, "GroupNorm")) == 2, str(report)
    compare(model, out, [(1,), (3,)], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("groups", [1, 16], ids=["one-group", "group-per-channel"])
def test_num_groups_extremes(tmp_path, groups):
    torch.manual_seed(0)
    module = nn.Sequential(nn.Conv2d(4, 16, 1), nn.GroupNorm(groups, 16), nn.SiLU())
    nn.init.normal_(module[1].weight, 1.0, 0.3)
    model = export(module, (torch.randn(2, 4, 5, 5),), tmp_path / "m.onnx", False, 17)
    out, report = substitute(model)
    (node,) = plugin_nodes(out, "GroupNorm")
    assert plugin_attrs(node)["num_groups"] == groups and report.replaced[0]["variant"] == "group+silu"
    compare(model, out, [()], rtol=1e-4, atol=1e-4)


# --- onnx.helper forms -------------------------------------------------------------------

C, GROUPS, HW = 8, 2, (3, 5)


def _graph(nodes, inits, outputs, opset, extra_inputs=(), out_dims=None):
    ins = [h.make_tensor_value_info("x", T.FLOAT, ["n", C, *HW])] + list(extra_inputs)
    outs = [h.make_tensor_value_info(o, T.FLOAT, out_dims or ["n", C, *HW]) for o in outputs]
    m = h.make_model(h.make_graph(nodes, "g", ins, outs, inits), opset_imports=[h.make_opsetid("", opset)])
    if not any(n.op_type == "GroupNormalization" for n in nodes) or opset >= 21:  # GroupNormalization-18 is deprecated
        onnx.checker.check_model(m, full_check=True)
    return m


def _init(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(value, dtype), name)


def _affine_inits(scale_shape=(C, 1, 1)):
    return [_init("gamma", RNG.normal(1, 0.3, scale_shape)), _init("beta", RNG.normal(0, 0.3, scale_shape))]


def decomposed_nodes(src="x", y="y"):
    """Reshape [0, G, -1] -> mean / Sub / Pow / mean / Add eps / Sqrt / Div -> Reshape back -> Mul -> Add."""
    return [
        h.make_node("Reshape", [src, "grp"], ["g0"]),
        h.make_node("ReduceMean", ["g0"], ["mu"], axes=[-1]),
        h.make_node("Sub", ["g0", "mu"], ["d"]),
        h.make_node("Pow", ["d", "two"], ["d2"]),
        h.make_node("ReduceMean", ["d2"], ["var"], axes=[-1]),
        h.make_node("Add", ["var", "eps"], ["ve"]),
        h.make_node("Sqrt", ["ve"], ["sd"]),
        h.make_node("Div", ["d", "sd"], ["nrm"]),
        h.make_node("Shape", [src], ["shp"]),
        h.make_node("Reshape", ["nrm", "shp"], ["back"]),
        h.make_node("Mul", ["back", "gamma"], ["scaled"]),
        h.make_node("Add", ["scaled", "beta"], [y]),
    ]


def decomposed_inits():
    return [_init("grp", [0, GROUPS, -1], np.int64), _init("two", 2.0), _init("eps", 1e-5)] + _affine_inits()


SHAPES = [(2,), (1,)]


def test_decomposed_form_with_bias_and_silu():
    nodes = [h.make_node("Add", ["x", "cbias"], ["s"])] + decomposed_nodes("s", "gn") + [
        h.make_node("Sigmoid", ["gn"], ["sg"]), h.make_node("Mul", ["gn", "sg"], ["y"])]
    model = _graph(nodes, decomposed_inits() + [_init("cbias", RNG.normal(0, 1, (C, 1, 1)))], ["y"], 13)
    out, report = substitute(model)
    (node,) = plugin_nodes(out)
    a = plugin_attrs(node)
    assert node.op_type == "GroupNorm" and a["num_groups"] == GROUPS and "bias" in a and a["activation"] == "silu"
    assert report.replaced[0]["variant"] == "group+silu+bias" and len(out.graph.node) == 1
    compare(model, out, SHAPES)


def test_decomposed_group_affine_is_left_to_layer_norm_rules():
    """An affine over the grouped view ([N, G, L] * w) is no GroupNorm: nothing is claimed as one."""
    nodes = decomposed_nodes()
    nodes[9] = h.make_node("Mul", ["nrm", "gw"], ["nrm2"])
    nodes.insert(10, h.make_node("Reshape", ["nrm2", "shp"], ["back"]))
    model = _graph(nodes, decomposed_inits() + [_init("gw", 2.0)], ["y"], 13)
    out, _ = substitute(model)
    assert not plugin_nodes(out, "GroupNorm")


@pytest.mark.parametrize("opset", [18, 21])
@pytest.mark.parametrize("skip", ["none", "full", "per-channel"])
def test_group_normalization_op(opset, skip):
    per_group = opset == 18  # opset 18: scale and bias per group; 21: per channel
    n = GROUPS if per_group else C
    inits = [_init("scale", RNG.normal(1, 0.3, n)), _init("bias", RNG.normal(0, 0.3, n))]
    extra, nodes, src = [], [], "x"
    if skip != "none":
        dims = ["n", C, *HW] if skip == "full" else ["n", C, 1, 1]
        extra = [h.make_tensor_value_info("skip", T.FLOAT, dims)]
        nodes.append(h.make_node("Add", ["x", "skip"], ["s"]))
        src = "s"
    nodes.append(h.make_node("GroupNormalization", [src, "scale", "bias"], ["y"], num_groups=GROUPS, epsilon=1e-4))
    model = _graph(nodes, inits, ["y"], opset, extra)
    out, report = substitute(model)
    (node,) = plugin_nodes(out)
    a = plugin_attrs(node)
    assert a["gamma"].shape == (C,) and a["num_groups"] == GROUPS and abs(a["epsilon"] - 1e-4) < 1e-9
    assert len(node.input) == (1 if skip == "none" else 2) and len(out.graph.node) == 1
    expected = {"none": "group", "full": "group+skip", "per-channel": "group+skip(per-channel)"}[skip]
    assert report.replaced[0]["variant"] == expected  # a lone op too: TensorRT's own is wrong at num_groups = 1
    assert any("GroupNormalization-18 is deprecated" in n for n in report.notes) == per_group
    compare(model, out, SHAPES)


def test_non_divisible_reshape_is_left():
    nodes = decomposed_nodes()
    model = _graph(nodes, [_init("grp", [0, 3, -1], np.int64), _init("two", 2.0), _init("eps", 1e-5)] + _affine_inits(),
                   ["y"], 13)
    out, _ = substitute(model)
    assert not plugin_nodes(out, "GroupNorm")


def test_broadcast_over_batch_is_not_folded():
    """x + [1, C, H, W] (a broadcast the plugin cannot take): the GroupNorm is fused, the Add kept."""
    inits = [_init("scale", RNG.normal(1, 0.3, C)), _init("bias", RNG.normal(0, 0.3, C))]
    extra = [h.make_tensor_value_info("pos", T.FLOAT, [1, C, *HW])]
    nodes = [h.make_node("Add", ["x", "pos"], ["s"]),
             h.make_node("GroupNormalization", ["s", "scale", "bias"], ["y"], num_groups=GROUPS)]
    model = _graph(nodes, inits, ["y"], 21, extra)
    out, report = substitute(model)
    assert [n.op_type for n in out.graph.node] == ["Add", "GroupNorm"]
    assert "no-skip" in report.replaced[0]["variant"]
    compare(model, out, SHAPES)


# --- the reference itself --------------------------------------------------------------

def test_reference_matches_torch():
    x = RNG.standard_normal((2, 8, 3, 5)).astype(np.float32)
    skip = RNG.standard_normal((2, 8, 1, 1)).astype(np.float32)
    g, b, bias = (RNG.standard_normal(8).astype(np.float32) for _ in range(3))
    y, s = group_norm.reference(x, skip, num_groups=4, gamma=g, beta=b, bias=bias, activation_name="silu",
                                epsilon=1e-5, output_sum=True)
    ts = torch.from_numpy(x) + torch.from_numpy(bias)[None, :, None, None] + torch.from_numpy(skip)
    ty = F.silu(F.group_norm(ts.double(), 4, torch.from_numpy(g).double(), torch.from_numpy(b).double(), 1e-5))
    np.testing.assert_allclose(s, ts.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y, ty.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="not divisible"):
        group_norm.reference(x, num_groups=3, gamma=g)
    with pytest.raises(ValueError, match="neither"):
        group_norm.reference(x, x[:1], num_groups=4, gamma=g)
