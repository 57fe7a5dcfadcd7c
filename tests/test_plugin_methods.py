"""Plugin methods TensorRT's builder calls (output dims through a real
IExprBuilder, output types, format combinations, configure, workspace),
driven directly through the C ABI harness compiled against the real headers
of each TensorRT major, for both interfaces (IPluginV2DynamicExt and
IPluginV3). CPU only: nothing here launches a kernel."""

from __future__ import annotations

import numpy as np
import pytest

from plugin_harness import (BF16, BOOL, CHW2, CHW32, DHWC, DHWC8, FLOAT, HALF, HWC, HWC8, HWC16, INT8, INT32, LINEAR,
                            PF_CHAR, PF_FLOAT32)




def norm(h, **kw):
    attrs = dict(norm="layer", gamma=np.ones(16, np.float32))
    attrs.update(kw)
    return h.create_from("SkipNorm", **attrs)


def test_output_dims_follow_input(h):
    for shape in [(16,), (3, 16), (2, 5, 16), (1, 1, 1, 7, 16), (0, 16)]:
        p = norm(h, output_sum=1)
        assert p.output_dims(0, [shape, shape]) == shape
        assert p.output_dims(1, [shape, shape]) == shape
    p = h.create_from("BiasActivation", activation="gelu")
    assert p.output_dims(0, [(4, 9, 1)]) == (4, 9, 1)


def test_output_dims_reject_bad_index_or_inputs(h):
    p = norm(h)  # one output
    assert p.output_dims(1, [(2, 16)]) is None
    assert p.output_dims(0, [(2, 16)] * 3) is None
    assert h.create_from("BiasActivation", activation="relu").output_dims(0, []) is None


def test_output_types(h):
    p = norm(h, output_sum=1)
    for t in (FLOAT, HALF, BF16):
        assert p.output_type(0, [t, t]) == t and p.output_type(1, [t, t]) == t


@pytest.mark.parametrize("nb_in,nb_out", [(1, 1), (2, 1), (1, 2), (2, 2)])
def test_format_combinations_are_consistent(h, nb_in, nb_out):
    p = norm(h, output_sum=int(nb_out == 2))
    n = nb_in + nb_out
    for t in (FLOAT, HALF, BF16):
        for pos in range(n):
            assert p.supports(pos, [t] * n, nb_in)  # all one float type: accepted
            mixed = [t] * n
            if pos:
                mixed[pos] = FLOAT if t != FLOAT else HALF
                assert not p.supports(pos, mixed, nb_in)  # mixing types never
    for bad in (INT8, INT32, BOOL):
        assert not p.supports(0, [bad] * n, nb_in)
    assert not p.supports(0, [HALF] * n, nb_in, formats=[CHW2] * n)
    assert not p.supports(n, [HALF] * n, nb_in)  # position out of range


# (type, format, rank) GroupNorm takes besides linear: TensorRT's channels-last formats for that type
CHANNELS_LAST = [(HALF, HWC8, 4), (BF16, HWC8, 4), (HALF, HWC16, 4), (FLOAT, HWC, 4), (HALF, DHWC8, 5), (BF16, DHWC8, 5),
                 (FLOAT, DHWC, 5)]


def group_norm(h, c=40, **kw):
    return h.create_from("GroupNorm", num_groups=4, gamma=np.ones(c, np.float32), **kw)


@pytest.mark.parametrize("t,fmt,rank", CHANNELS_LAST)
def test_group_norm_takes_channels_last(h, t, fmt, rank):
    """Channels-last formats for the types TensorRT defines them for, with every other input and output
    in input 0's type and format; C must be known (the channel stride depends on it)."""
    p = group_norm(h, output_sum=1)
    shape = (2, 40) + (5,) * (rank - 2)
    dyn = (-1, 40) + (-1,) * (rank - 2)
    for dims in (shape, dyn):
        assert p.supports(0, [t] * 3, 1, formats=[fmt] * 3, shapes=[dims] * 3)
        assert p.supports(2, [t] * 3, 1, formats=[fmt] * 3, shapes=[dims] * 3)
        assert not p.supports(1, [t] * 3, 1, formats=[fmt, LINEAR, fmt], shapes=[dims] * 3)  # formats mixed
    skip = group_norm(h)  # x and a [N, C, 1, 1] skip alike
    assert skip.supports(1, [t] * 3, 2, formats=[fmt] * 3, shapes=[shape, (2, 40) + (1,) * (rank - 2), shape])
    assert not p.supports(0, [t] * 3, 1, formats=[fmt] * 3, shapes=[(2, -1) + shape[2:]] * 3)  # C unknown
    assert not p.supports(0, [t] * 3, 1, formats=[fmt] * 3, shapes=[shape[:-1]] * 3)  # another rank


def test_group_norm_refuses_other_formats(h):
    p = group_norm(h)
    four = [(2, 40, 5, 5)] * 2
    for t, fmt in [(FLOAT, HWC8), (BF16, HWC16), (BF16, HWC), (HALF, HWC), (FLOAT, HWC16), (HALF, CHW32), (HALF, CHW2)]:
        assert not p.supports(0, [t] * 2, 1, formats=[fmt] * 2, shapes=four), (t, fmt)
    # a row of packs of a pixel wider than a CTA's threads: channels-first only
    wide = group_norm(h, c=8192)
    assert not wide.supports(0, [HALF] * 2, 1, formats=[HWC8] * 2, shapes=[(1, 8192, 4, 4)] * 2)
    assert wide.supports(0, [HALF] * 2, 1, shapes=[(1, 8192, 4, 4)] * 2)


@pytest.mark.parametrize("fmt", [HWC8, HWC])
def test_other_ops_take_only_linear(h, fmt):
    t = HALF if fmt == HWC8 else FLOAT
    four = [(2, 16, 4, 16)] * 3
    assert not norm(h).supports(0, [t] * 3, 2, formats=[fmt] * 3, shapes=four)
    assert norm(h).supports(0, [t] * 3, 2, shapes=four)


def test_group_norm_configures_channels_last(h):
    """configure with a channels-last format plans (the device query skipped without a GPU) and the
    workspace covers both designs."""
    p = group_norm(h)
    p.set_formats([HWC8, HWC8])
    assert p.configure([HALF] * 2, [(-1, 40, 8, 8)] * 2, 1) == 0
    assert p.configure([HALF] * 2, [(2, 40, 8, 8)] * 2, 1) == 0
    assert p.workspace([HALF] * 2, [(2, 40, 8, 8)] * 2, 1) > 0


def test_group_norm_workspace_follows_the_format(h):
    """getWorkspaceSize sees the formats: channels-last asks for the resident design's partials (per
    group and CTA), linear for the channels-first designs' (the same bound as the bare kernels')."""
    from trtplugins.ops import group_norm as gn

    p = h.create_from("GroupNorm", num_groups=32, gamma=np.ones(320, np.float32))
    shapes = [(2, 320, 8, 8)] * 2
    assert p.workspace([HALF] * 2, shapes, 1) == gn.workspace_size(2, 32, "channels_first") > 0
    p.set_formats([HWC8, HWC8])
    assert p.workspace([HALF] * 2, shapes, 1) == gn.workspace_size(2, 32, "channels_last") > 0


def test_format_rejects_wrong_io_counts(h):
    assert not norm(h).supports(0, [HALF] * 4, 3)  # three inputs
    assert not norm(h).supports(0, [HALF] * 3, 1)  # two outputs, one expected
    assert not h.create_from("BiasActivation", activation="silu").supports(0, [HALF] * 3, 2)


def test_configure_workspace_and_serialized_input_count(h):
    p = norm(h, output_sum=1)
    shapes = [(-1, 7, 16), (-1, 7, 16), (-1, 7, 16), (-1, 7, 16)]  # build time: dynamic dims are -1
    p.configure([HALF] * 4, shapes, 2)
    assert p.workspace([HALF] * 4, [(3, 7, 16)] * 4, 2) == 0
    two = p.serialize()
    p.configure([HALF] * 3, shapes[:1] + shapes[2:], 1)
    one = p.serialize()
    if h.api == 2:
        assert one != two  # V2: the input count travels in the blob (enqueue gets none)
    else:
        assert one == two  # V3: only the op's fields; onShapeChange gives the count at run time
    assert h.deserialize("SkipNorm", one).serialize() == one
    assert p.clone().serialize() == one


def test_configure_with_bad_shapes_logs_and_lives(h, capfd):
    p = norm(h)
    p.configure([FLOAT] * 2, [(4, 15), (4, 15)], 1)  # hidden 15 != gamma 16
    assert "gamma has 16 values" in capfd.readouterr().err
    p = norm(h)
    p.configure([FLOAT] * 3, [(4, 16), (5, 16), (4, 16)], 2)  # skip shape differs
    assert "skip dims" in capfd.readouterr().err


def test_skip_may_broadcast_over_leading_dims(h, capfd):
    """[B, S, H] + [S, H] or [1, S, H] (embeddings + position embeddings) is accepted; a skip that
    broadcasts anywhere else is refused with the dims named."""
    x = (2, 5, 16)
    for skip in [(5, 16), (1, 5, 16), (1, 1, 16), (16,), (-1, 5, 16)]:
        p = norm(h, output_sum=1)
        assert p.output_dims(0, [x, skip]) == x and p.output_dims(1, [x, skip]) == x
        p.configure([FLOAT] * 4, [x, skip, x, x], 2)
        assert "skip dims" not in capfd.readouterr().err, skip
    for skip in [(2, 1, 16), (3, 16), (2, 2, 5, 16), (5, 8)]:
        p = norm(h)
        p.configure([FLOAT] * 3, [x, skip, x], 2)
        assert "skip dims" in capfd.readouterr().err, skip


def test_harness_creation_matches_registry_fields(h):
    """The harness creates through the same creator list the registry gets."""
    assert h.create("BiasActivation", [("activation", PF_CHAR, np.frombuffer(b"hard_swish\0", np.int8))]) is not None
    assert h.create("BiasActivation", [("activation", PF_FLOAT32, np.ones(1, np.float32))]) is None
    assert h.create("Nope", []) is None


def test_enqueue_without_weights_returns_an_error(h, capfd):
    """Enqueue never allocates or copies (it may be captured in a CUDA graph): without
    initialize() it refuses with a reason, instead of uploading the weights itself."""
    import ctypes

    p = norm(h)
    p.configure([FLOAT] * 2, [(-1, 16), (-1, 16)], 1)
    host = (ctypes.c_float * 64)()
    addr = ctypes.addressof(host)
    assert p.enqueue([FLOAT] * 2, [(4, 16), (4, 16)], [addr], [addr]) != 0
    err = capfd.readouterr().err
    assert "SkipNorm::enqueue" in err and "not initialized" in err
    assert p.clone().enqueue([FLOAT] * 2, [(4, 16), (4, 16)], [addr], [addr]) != 0  # a clone of it neither


@pytest.mark.parametrize(
    "gpu,cc,has_image,needle",
    [
        ("Tesla V100-SXM2-16GB", (7, 0), True, "compute capability >= 7.5"),
        ("Tesla P4", (6, 1), True, "sm_61"),
        ("Tesla T4", (7, 5), False, "no kernel image in this build"),
        ("NVIDIA H200", (9, 0), True, ""),
        ("Tesla T4", (7, 5), True, ""),
        ("NVIDIA RTX PRO 6000 Blackwell", (12, 0), True, ""),
    ],
)
def test_unsupported_gpu_is_named_with_what_it_lacks(h, gpu, cc, has_image, needle):
    problem = h.gpu_problem(gpu, cc, has_image)
    if not needle:
        assert problem == ""
    else:
        assert needle in problem and gpu in problem and f"sm_{cc[0]}{cc[1]}" in problem


def test_no_gpu_is_not_refused(h):
    """Without a CUDA device (this CPU machine) nothing can be asked: build-time methods still work."""
    assert h.gpu_problem() == ""
    assert norm(h).supports(0, [FLOAT, FLOAT], 1)
    assert "90" in h.architectures


def test_versions_and_interfaces(h):
    p = norm(h)
    assert p.api == h.api and p.version == {2: "1", 3: "2"}[h.api]
    a = p.attach()  # V3: attachToContext; V2: clone
    assert a.api == h.api and a.serialize() == p.serialize()


def test_configure_status(h, capfd):
    """V3 configurePlugin returns a status: bad shapes are an error, not a crash."""
    p = norm(h)
    rc = p.configure([FLOAT] * 2, [(4, 15), (4, 15)], 1)
    assert "gamma has 16 values" in capfd.readouterr().err
    assert rc == (0 if h.api == 2 else -1)
    assert p.configure([FLOAT] * 2, [(-1, 16), (-1, 16)], 1) == 0


def test_serialization_round_trip(h):
    """V3: getFieldsToSerialize -> createPlugin(kRUNTIME); V2: blob -> deserializePlugin. Same plugin back."""
    g16 = np.linspace(-2, 2, 16).astype(np.float16)
    p = norm(h, norm="rms", gamma=g16, beta=np.ones(16, np.float32), bias=np.full(16, 0.5, np.float32), epsilon=3e-7, output_sum=1)
    blob = p.serialize()
    assert h.api == 2 or b"rms\0" in blob  # V3 fields carry the enum by name
    assert g16.astype(np.float32).tobytes() in blob and np.float32(3e-7).tobytes() in blob
    q = h.deserialize("SkipNorm", blob)
    assert q is not None and q.serialize() == blob and q.nb_outputs == 2
    b = h.create_from("BiasActivation", activation="quick_gelu")
    assert h.deserialize("BiasActivation", b.serialize()).serialize() == b.serialize()
    assert h.deserialize("SkipNorm", b.serialize()) is None  # another op's fields: refused


def test_schema_of_the_library(h):
    """The library's own schema is the one trtplugins.ops reads (trtplugins/schema.json)."""
    from trtplugins import ops

    assert h.schema() == ops.SCHEMA_PATH.read_text()
