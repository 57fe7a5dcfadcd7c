"""V2 blobs of format 1 (before the field tables; tests/data/blobs_v1, made by its make.py with that
code) still deserialize: every field and the input count come back, and the plugin serializes
itself in the current format (2: its fields), which reads back to the same blob."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from plugin_harness import PF_CHAR, PF_FLOAT32, PF_INT32, Harness, find_harness

DATA = Path(__file__).resolve().parent / "data" / "blobs_v1"
CASES = json.loads((DATA / "fields.json").read_text())


def decode(blob: bytes) -> tuple[int, str, int, dict]:
    """(format, plugin name, input count, {field: value}) of a V2 blob of format 2."""
    magic, fmt, _, size, _ = struct.unpack_from("<IHHII", blob)
    assert magic == 0x50545254 and size == len(blob) - 16
    pos = 16

    def take(fmt_: str):
        nonlocal pos
        v = struct.unpack_from(fmt_, blob, pos)
        pos += struct.calcsize(fmt_)
        return v

    def string() -> str:
        nonlocal pos
        (n,) = take("<I")
        pos += n
        return blob[pos - n:pos].decode()

    name, (nb_inputs, count) = string(), take("<iI")
    fields = {}
    for _ in range(count):
        key = string()
        ftype, length, nbytes = take("<iiI")
        data = blob[pos:pos + nbytes]
        pos += nbytes
        if ftype == PF_CHAR:
            fields[key] = data.rstrip(b"\0").decode()
        elif ftype == PF_INT32:
            fields[key] = int(np.frombuffer(data, np.int32)[0])
        else:
            assert ftype == PF_FLOAT32
            values = np.frombuffer(data, np.float32)
            fields[key] = values.tolist() if length > 1 or isinstance(CASES[name]["fields"].get(key), list) else float(values[0])
    assert pos == len(blob)
    return fmt, name, nb_inputs, fields


@pytest.fixture(scope="module", params=[10, 11], ids=lambda m: f"trt{m}")
def v2(request):
    path = find_harness(request.param)
    if path is None:
        pytest.skip(f"harness for TensorRT {request.param} not built (needs nvcc and TensorRT headers)")
    return Harness(path, api=2)


@pytest.mark.parametrize("op", sorted(CASES))
def test_a_format_1_blob_loads_with_every_field(v2, op):
    case = CASES[op]
    old = (DATA / case["blob"]).read_bytes()
    assert struct.unpack_from("<H", old, 4)[0] == 1
    p = v2.deserialize(op, old)
    assert p is not None, f"{op}: the format-1 blob was refused"
    fmt, name, nb_inputs, fields = decode(p.serialize())
    assert (fmt, name, nb_inputs) == (2, op, case["nb_inputs"])
    want = {k: (np.float32(v).item() if isinstance(v, float) else np.float32(v).tolist() if isinstance(v, list) else v)
            for k, v in case["fields"].items()}
    assert fields == want
    again = v2.deserialize(op, p.serialize())
    assert again is not None and again.serialize() == p.serialize()


def test_a_format_1_blob_with_an_unknown_enum_id_is_refused(v2, capfd):
    old = bytearray((DATA / "SkipNorm.bin").read_bytes())
    payload = 16 + 4 + len("SkipNorm") + 4  # header, name, input count: the norm id follows
    old[payload:payload + 4] = struct.pack("<i", 7)
    old[12:16] = struct.pack("<I", _fnv1a(bytes(old[16:])))
    assert v2.deserialize("SkipNorm", bytes(old)) is None
    assert "serialized norm id 7 is invalid" in capfd.readouterr().err


def _fnv1a(data: bytes) -> int:
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h
