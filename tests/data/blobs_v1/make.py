"""Writes one V2 plugin blob per op in blob format 1 (the format before the field tables), with
non-default fields, and fields.json (what each blob holds). Run once, with the code of that
format (commit fc2d2c1): `python tests/data/blobs_v1/make.py <libtrtplugins_trt11_harness.so>`.
tests/test_old_blobs.py checks that the current code still reads them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))
sys.path.insert(0, str(HERE.parents[1]))

from plugin_harness import HALF, Harness  # noqa: E402


def vec(n: int, start: float) -> list[float]:
    return [round(start + 0.25 * i, 4) for i in range(n)]


#: op -> (fields, input shapes configured: the blob keeps the input count)
CASES = {
    "BiasActivation": ({"activation": "gelu_tanh", "bias": vec(5, -0.5)}, [(2, 5)]),
    "GatedActivation": ({"activation": "gelu", "gate": "second", "gate_bias": vec(4, 0.5),
                         "linear_bias": vec(4, -1.0)}, [(2, 4), (2, 4)]),
    "SkipNorm": ({"norm": "rms", "epsilon": 3e-6, "gamma": vec(6, 1.0), "beta": vec(6, 0.125),
                  "bias": vec(6, -0.75), "output_sum": 1}, [(3, 6)]),
    "GroupNorm": ({"num_groups": 2, "epsilon": 2e-5, "gamma": vec(4, 0.5), "beta": vec(4, 0.25),
                   "bias": vec(4, -0.5), "activation": "silu", "output_sum": 1}, [(1, 4, 3, 3), (1, 4, 1, 1)]),
    "CustomGeluPluginDynamic": ({"type_id": 1, "bias": vec(3, 0.75)}, [(2, 1, 3, 1, 1)]),
}


def main(harness: str) -> None:
    h = Harness(Path(harness), api=2)
    out = {}
    for name, (fields, shapes) in CASES.items():
        p = h.create_from(name, **{k: np.asarray(v, np.float32) if isinstance(v, list) else v
                                   for k, v in fields.items()})
        nb_out = p.nb_outputs
        p.configure([HALF] * (len(shapes) + nb_out), shapes + [shapes[0]] * nb_out, len(shapes))
        blob = p.serialize()
        (HERE / f"{name}.bin").write_bytes(blob)
        out[name] = {"fields": fields, "nb_inputs": len(shapes), "blob": f"{name}.bin"}
    (HERE / "fields.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
