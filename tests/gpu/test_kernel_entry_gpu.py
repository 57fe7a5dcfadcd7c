"""The C entry for any op by its fields (trtplugins.kernels.Kernel, plugin_src/capi/run.h) on the GPU:
every op of the schema against its reference, and bit for bit against the op's own bare launch
where it has one (the same kernel, the same per-shape choices). Tolerances: test_kernels.py's."""

from __future__ import annotations

import numpy as np
import pytest

from trtplugins import kernels, ops
from trtplugins.ops import registry

from .test_kernels import DTYPES, check, f64, randn, tdtype

SEED = 31


def weights(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


#: op -> (fields, input shapes): every op of the schema, with its optional inputs and weights
CASES = {
    ops.BIAS_ACTIVATION: ({"activation": "gelu_tanh", "bias": weights(96, 1)}, [(3, 5, 96)]),
    ops.GATED_ACTIVATION: ({"activation": "silu", "gate": "second", "gate_bias": weights(40, 2)}, [(7, 80)]),
    ops.SKIP_NORM: ({"norm": "layer", "gamma": weights(768, 3), "beta": weights(768, 4), "output_sum": 1},
                    [(2, 9, 768), (9, 768)]),
    ops.GROUP_NORM: ({"num_groups": 4, "gamma": weights(32, 5), "bias": weights(32, 6), "activation": "silu"},
                     [(2, 32, 6, 6), (2, 32, 6, 6)]),
    ops.LEGACY_GELU: ({"type_id": 0, "bias": weights(24, 7)}, [(4, 2, 24, 1, 1)]),
}


def test_every_op_has_a_case():
    assert sorted(CASES) == sorted(ops.OPS)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(CASES))
def test_the_entry_matches_the_reference(torch, record, op, dtype):
    fields, shapes = CASES[op]
    gen = torch.Generator(device="cuda").manual_seed(SEED)
    inputs = [randn(torch, gen, s, tdtype(torch, dtype)) for s in shapes]
    got = kernels.run(op, *inputs, **fields)
    got = list(got) if isinstance(got, tuple) else [got]
    refs = registry.run_reference(op, [f64(t) for t in inputs], fields)
    assert len(got) == len(refs)
    for i, (out, ref) in enumerate(zip(got, refs)):
        check(record, op, f"entry[{i}]", dtype, shapes[0], out, ref.astype(np.float64))


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_entry_is_the_bare_launch_bit_for_bit(torch, dtype):
    fields, shapes = CASES[ops.SKIP_NORM]
    gen = torch.Generator(device="cuda").manual_seed(SEED)
    x, skip = (randn(torch, gen, s, tdtype(torch, dtype)) for s in shapes)
    k = kernels.Kernel(ops.SKIP_NORM, **fields)
    y, s = k(x, skip)
    w = {name: torch.from_numpy(fields[name]).cuda() for name in ("gamma", "beta")}
    y2, s2 = registry.module(ops.SKIP_NORM).kernel(x, skip, **w, output_sum=True)
    assert torch.equal(y, y2) and torch.equal(s, s2)
    assert torch.equal(k(x, skip)[0], y)  # a second call: no upload, the same launch
