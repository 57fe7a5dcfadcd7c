"""GroupNorm plugin methods (issue 16 item 1) through the C ABI harness, both TensorRT majors and
both interfaces, on the CPU: fields and bad fields, output dims and types, formats, configure
refusing bad shapes with the dims named, the workspace the split needs, serialization."""

from __future__ import annotations

import numpy as np

from plugin_harness import BF16, FLOAT, HALF, INT8, PF_CHAR, PF_FLOAT32, PF_INT32

C = 32




def gn(h, **kw):
    attrs = dict(num_groups=8, gamma=np.ones(C, np.float32), beta=np.zeros(C, np.float32))
    attrs.update(kw)
    return h.create_from("GroupNorm", **attrs)


def test_output_dims_types_and_outputs(h):
    for shape in [(2, C, 64, 64), (1, C, 1), (3, C, 5, 7, 2)]:
        p = gn(h, output_sum=1)
        assert p.nb_outputs == 2
        assert p.output_dims(0, [shape]) == shape and p.output_dims(1, [shape, shape]) == shape
    p = gn(h, activation="silu")
    assert p.nb_outputs == 1 and p.output_dims(1, [(2, C, 4, 4)]) is None
    for t in (FLOAT, HALF, BF16):
        assert p.output_type(0, [t]) == t


def test_formats(h):
    p = gn(h)
    for t in (FLOAT, HALF, BF16):
        assert p.supports(0, [t, t], 1) and p.supports(1, [t, t], 1)
        assert p.supports(2, [t, t, t], 2)  # with a skip input
    assert not p.supports(1, [HALF, FLOAT], 1) and not p.supports(0, [INT8, INT8], 1)


def test_fields_and_bad_fields(h, capfd):
    assert gn(h, activation="silu", bias=np.ones(C, np.float16), epsilon=1e-6) is not None
    for bad, needle in [
        ([("num_groups", PF_INT32, np.array([5], np.int32)), ("gamma", PF_FLOAT32, np.ones(C, np.float32))], "not divisible"),
        ([("num_groups", PF_INT32, np.array([0], np.int32)), ("gamma", PF_FLOAT32, np.ones(C, np.float32))], "num_groups must be >= 1"),
        ([("gamma", PF_FLOAT32, np.ones(C, np.float32))], "num_groups"),
        ([("num_groups", PF_INT32, np.array([4], np.int32)), ("gamma", PF_FLOAT32, np.ones(C, np.float32)),
          ("beta", PF_FLOAT32, np.ones(C - 1, np.float32))], "beta has 31 values"),
        ([("num_groups", PF_INT32, np.array([4], np.int32)), ("gamma", PF_FLOAT32, np.ones(C, np.float32)),
          ("activation", PF_CHAR, np.frombuffer(b"gelu\0", np.int8))], "gelu"),
        ([("num_groups", PF_FLOAT32, np.array([4], np.float32)), ("gamma", PF_FLOAT32, np.ones(C, np.float32))], "num_groups"),
    ]:
        assert h.create("GroupNorm", bad) is None, needle
        assert needle in capfd.readouterr().err, needle


def test_configure_refuses_bad_shapes(h, capfd):
    for shapes, nb_in, needle in [
        ([(2, 16, 8, 8), (2, 16, 8, 8)], 1, "16 channels (dim 1), gamma has 32 values"),
        ([(2, C), (2, C)], 1, "rank 2, expected N, C, spatial"),
        ([(2, C, 8, 8), (2, C, 8, 1), (2, C, 8, 8)], 2, "skip dims [2,32,8,1] are neither"),
        ([(2, C, 8, 8), (1, C, 1, 1), (2, C, 8, 8)], 2, "skip dims [1,32,1,1]"),
    ]:
        p = gn(h)
        rc = p.configure([FLOAT] * len(shapes), shapes, nb_in)
        assert needle in capfd.readouterr().err, needle
        assert rc == (0 if h.api == 2 else -1)
    for skip in [(2, C, 8, 8), (2, C, 1, 1), (-1, C, 1, 1)]:  # like x, per (n, c), dynamic batch
        assert gn(h).configure([HALF] * 3, [(-1, C, 8, 8), skip, (-1, C, 8, 8)], 2) == 0
        assert "neither" not in capfd.readouterr().err


def test_workspace_covers_the_split(h):
    """The split needs partial statistics: a workspace > 0 sized by the profile's largest batch,
    enough for every smaller shape (trtplugins.kernels computes the same from the kernel library)."""
    p = gn(h, num_groups=32)
    p.configure([HALF] * 2, [(-1, C, -1, -1)] * 2, 1)
    sizes = [p.workspace([HALF] * 2, [(n, C, 64, 64)] * 2, 1) for n in (1, 2, 8)]
    assert all(s > 0 for s in sizes) and sizes == sorted(sizes)
    # 2 x 32 groups of 4096 elements split into chunks: (528 + 64) float2 partials + 64 shifts, 256-aligned
    assert sizes[1] == 5120
    assert p.workspace([HALF] * 2, [(2, C, 3, 3)] * 2, 1) == sizes[1]  # the bound does not depend on spatial size


def test_serialization_round_trip(h):
    p = gn(h, num_groups=4, activation="silu", bias=np.linspace(-1, 1, C).astype(np.float32), epsilon=1e-6, output_sum=1)
    blob = p.serialize()
    assert h.api == 2 or b"silu\0" in blob
    q = h.deserialize("GroupNorm", blob)
    assert q is not None and q.serialize() == blob and q.nb_outputs == 2
    assert q.clone().serialize() == blob and p.attach().serialize() == blob
    assert h.deserialize("SkipNorm", blob) is None
