#!/usr/bin/env python3
"""Where the small-launch SkipNorm variant stops winning: the plugin's small-launch and large-launch
variants forced at row counts around the switch, graph-replay time (the switch, skip_norm.small_elems(),
came from this run with a switch at 128 rows)."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import bench_kernels as bk  # noqa: E402
from trtplugins.ops import skip_norm  # noqa: E402

out = []
for op in bk.NORM_OPS:
    for dname in ("fp16", "fp32"):
        for hidden in (768, 4096):
            kn, io = bk.KNAME[dname], dname != "fp32"
            small = skip_norm.variant(kn, *bk.norm_kind(op), hidden, io, rows=1)
            large = skip_norm.variant(kn, *bk.norm_kind(op), hidden, io)
            for rows in (32, 64, 128, 256, 512, 1024):
                t = {v: bk.graph_time(bk.make_op(op, rows, hidden, bk.DTYPES[dname], variant=v)[0], 3e-6)
                     for v in (small, large)}
                out.append({"op": op, "dtype": dname, "hidden": hidden, "rows": rows, "small": t[small] * 1e6,
                            "large": t[large] * 1e6})
                print(f"{op:16s} {dname} {rows:5d}x{hidden:<5d} small {t[small] * 1e6:6.2f} us  large {t[large] * 1e6:6.2f} us",
                      flush=True)
print(json.dumps(out))
