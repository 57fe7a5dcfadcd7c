"""GatedActivation plugin methods (issue 16 item 2) through the C ABI harness, both TensorRT majors and
both interfaces, on the CPU: output dims (the one-input form halves the last dim through the
IExprBuilder), types, formats, fields and bad fields, configure refusing bad shapes with the dims
named, serialization round trips and truncated blobs."""

from __future__ import annotations

import numpy as np
import pytest

from plugin_harness import BF16, FLOAT, HALF, INT8, PF_CHAR, PF_FLOAT32

W = 8  # operand width: y's last dim


def gated(h, **kw):
    attrs = dict(activation="silu")
    attrs.update(kw)
    return h.create_from("GatedActivation", **attrs)


def chars(s: bytes):
    return np.frombuffer(s + b"\0", np.int8)


def test_output_dims_and_types(h):
    p = gated(h, gate="second")
    assert p.nb_outputs == 1
    for shape in [(2, 5, 2 * W), (2 * W,), (1, 1, 1, 3, 2 * W), (0, 2 * W)]:  # halves of one input
        assert p.output_dims(0, [shape]) == shape[:-1] + (W,)
    for shape in [(2, 5, W), (W,), (0, W)]:  # two inputs
        assert p.output_dims(0, [shape, shape]) == shape
    assert p.output_dims(1, [(2, 2 * W)]) is None and p.output_dims(0, [(2, W)] * 3) is None
    assert p.output_dims(0, [()]) is None  # rank 0: no last dim to halve
    for t in (FLOAT, HALF, BF16):
        assert p.output_type(0, [t]) == t and p.output_type(0, [t, t]) == t


def test_formats(h):
    p = gated(h)
    for t in (FLOAT, HALF, BF16):
        assert p.supports(0, [t, t], 1) and p.supports(1, [t, t], 1)
        assert all(p.supports(pos, [t] * 3, 2) for pos in range(3))
    assert not p.supports(1, [HALF, FLOAT], 1) and not p.supports(2, [HALF, HALF, BF16], 2)
    assert not p.supports(0, [INT8, INT8], 1) and not p.supports(0, [HALF] * 4, 3)


@pytest.mark.parametrize("activation", ["silu", "gelu", "gelu_tanh", "relu"])
def test_every_activation_and_gate(h, activation):
    for gate in ("first", "second"):
        p = gated(h, activation=activation, gate=gate, gate_bias=np.ones(W, np.float16), linear_bias=np.ones(W, np.float32))
        assert p.configure([HALF] * 2, [(-1, 2 * W), (-1, W)], 1) == 0


def test_bad_fields_are_refused_with_the_reason(h, capfd):
    act = ("activation", PF_CHAR, chars(b"gelu"))
    for fields, needle in [
        ([], "activation"),
        ([("activation", PF_CHAR, chars(b"quick_gelu"))], "quick_gelu"),  # a BiasActivation one, not gated here
        ([act, ("gate", PF_CHAR, chars(b"third"))], "third"),
        ([act, ("gate", PF_FLOAT32, np.ones(1, np.float32))], "gate"),
        ([act, ("gate_bias", PF_FLOAT32, np.ones(3, np.float32)), ("linear_bias", PF_FLOAT32, np.ones(4, np.float32))],
         "gate_bias has 3 values, linear_bias has 4"),
        ([act, ("linear_bias", PF_FLOAT32, np.array([1.0, np.nan], np.float32))], "is not finite"),
        ([act, ("bias", PF_FLOAT32, np.ones(W, np.float32))], "bias"),  # BiasActivation's field name
    ]:
        assert h.create("GatedActivation", fields) is None, needle
        err = capfd.readouterr().err
        assert needle in err and "GatedActivation::createPlugin" in err, (needle, err)


def test_configure_refuses_bad_shapes(h, capfd):
    bias = dict(gate_bias=np.ones(W, np.float32))
    for shapes, nb_in, kw, needle in [
        ([(2, 15), (2, 7)], 1, {}, "last dim of x [2,15] is odd"),
        ([(2, W), (2, W + 1), (2, W)], 2, {}, "x2 dims [2,9] differ from x dims [2,8]"),
        ([(2, W), (3, W), (2, W)], 2, {}, "x2 dims [3,8] differ"),
        ([(2, W), (W,), (2, W)], 2, {}, "x2 dims [8] differ"),  # no broadcast
        ([(2, 4 * W), (2, 2 * W)], 1, bias, "operand width of x [2,32] is 16, the biases have 8 values"),
        ([(2, 2 * W), (2, 2 * W), (2, 2 * W)], 2, bias, "operand width of x [2,16] is 16, the biases have 8 values"),
        ([(2, W)] * 4, 3, {}, "3 inputs, expected 1..2"),
    ]:
        rc = gated(h, **kw).configure([FLOAT] * len(shapes), shapes, nb_in)
        assert needle in capfd.readouterr().err, needle
        assert rc == (0 if h.api == 2 else -1)
    for shapes, nb_in in [([(-1, 2 * W), (-1, W)], 1), ([(-1, -1), (-1, -1)], 1), ([(-1, W), (-1, W), (-1, W)], 2),
                          ([(-1, 5, W), (4, -1, W), (4, 5, W)], 2)]:  # dynamic dims pass until known
        assert gated(h, **bias).configure([HALF] * len(shapes), shapes, nb_in) == 0
        assert capfd.readouterr().err == ""


def test_no_workspace(h):
    p = gated(h)
    p.configure([HALF] * 2, [(-1, 2 * W), (-1, W)], 1)
    assert p.workspace([HALF] * 2, [(4, 2 * W), (4, W)], 1) == 0


def test_serialization_round_trip(h):
    gb, lb = np.linspace(-1, 1, W).astype(np.float32), np.linspace(2, 3, W).astype(np.float16)
    p = gated(h, activation="gelu_tanh", gate="second", gate_bias=gb, linear_bias=lb)
    p.configure([HALF] * 2, [(-1, 2 * W), (-1, W)], 1)
    blob = p.serialize()
    assert h.api == 2 or (b"gelu_tanh\0" in blob and b"second\0" in blob)  # V3 fields carry the enums by name
    assert gb.tobytes() in blob and lb.astype(np.float32).tobytes() in blob
    q = h.deserialize("GatedActivation", blob)
    assert q is not None and q.serialize() == blob and q.nb_outputs == 1
    assert q.clone().serialize() == blob and p.attach().serialize() == blob
    assert h.deserialize("BiasActivation", blob) is None
    other = gated(h, activation="relu")
    assert h.deserialize("GatedActivation", other.serialize()).serialize() == other.serialize() != blob


def test_serialized_input_count_and_truncation(h):
    """V2: the input count travels in the blob (enqueue gets none; one input means halves) and every
    truncated blob is refused; V3 serializes the op's fields only (onShapeChange gives the count)."""
    p = gated(h, gate_bias=np.ones(W, np.float32))
    p.configure([FLOAT] * 2, [(-1, 2 * W), (-1, W)], 1)
    one = p.serialize()
    p.configure([FLOAT] * 3, [(-1, W)] * 3, 2)
    two = p.serialize()
    assert h.deserialize("GatedActivation", one).serialize() == one
    if h.api == 3:
        assert one == two
        return
    assert one != two
    assert all(h.deserialize("GatedActivation", one[:n]) is None for n in range(len(one)))
    assert h.deserialize("GatedActivation", one + b"\0") is None
