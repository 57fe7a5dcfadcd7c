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
#: op -> (fields, input shapes): each op module's EXAMPLE
CASES = {op: m.EXAMPLE for op, m in registry.MODULES.items()}


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
