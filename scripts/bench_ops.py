"""What scripts/bench_kernels.py times: its points (shapes per op), and for each point our launch, the
eager chain it replaces (also what torch.compile compiles) and Liger-Kernel's op where there is one."""

from __future__ import annotations

import functools
import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from trtplugins import ops  # noqa: E402
from trtplugins.ops import bias_activation, gated_activation, group_norm, skip_norm  # noqa: E402

from bench_points import (GATED_OPS, GATED_POINTS, GN_GROUPS, GN_OPS, GN_SHAPES, HIDDENS, HOIST, KNAME, LOOP,  # noqa: E402,F401
                          NORM_OPS, ODD, OPS, SMALL, X_BYTES)

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
EPS = skip_norm.EPSILON
#: the plugin each point times (tests/test_completeness.py: every plugin has a point, or says why not)
PLUGIN_OF = {"layer_norm": ops.SKIP_NORM, "skip_layer_norm": ops.SKIP_NORM, "rms_norm": ops.SKIP_NORM,
             "skip_rms_norm": ops.SKIP_NORM, "bias_gelu": ops.BIAS_ACTIVATION, "bias_relu6": ops.BIAS_ACTIVATION,
             "group_norm": ops.GROUP_NORM, "group_norm_silu": ops.GROUP_NORM, "swiglu": ops.GATED_ACTIVATION,
             "geglu": ops.GATED_ACTIVATION}
NOT_BENCHED = {ops.LEGACY_GELU: "BiasActivation's kernel (its gelu_tanh launches: bias_gelu's kernel)"}
PEERS = ("ours", "eager", "compile", "liger")


# --- ops: ours, the eager chain (also what torch.compile compiles), Liger's op ------------------


@functools.cache
def _liger():
    """Liger-Kernel's forward ops, or None (said once on stderr: a missing peer must not pass unnoticed)."""
    try:
        from liger_kernel.ops.fused_add_rms_norm import fused_add_rms_norm_forward
        from liger_kernel.ops.geglu import geglu_forward
        from liger_kernel.ops.layer_norm import layer_norm_forward
        from liger_kernel.ops.rms_norm import rms_norm_forward
        from liger_kernel.ops.swiglu import swiglu_forward
    except ImportError as e:
        print(f"WARNING: no Liger-Kernel peer ({e}); install its wheel with the python that runs this", file=sys.stderr)
        return None
    return {"layer_norm": layer_norm_forward, "rms_norm": rms_norm_forward,
            "fused_add_rms_norm": fused_add_rms_norm_forward, "swiglu": swiglu_forward, "geglu": geglu_forward}


def rms_chain(s, w):  # HF LLaMA's RMSNorm: FP32 statistics, cast back, times the weight
    v = s.float()
    return (v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + EPS)).to(s.dtype) * w


def with_sum(name) -> bool:
    """Whether a norm op writes the sum too: skip+RMSNorm, LLaMA's residual stream (the next block's input)."""
    return name == "skip_rms_norm"


def make_op(name, rows, hidden, dt, variant=-1, io_weights=True):
    """(ours, chain, chain_args, liger or None, bytes) for one op and shape. io_weights: the norms
    also get gamma/beta in the I/O dtype (exact copies, as the plugin has for a 16-bit export)."""
    if name in GATED_OPS:
        return make_gated(name, rows, hidden, dt)
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(rows, hidden, device="cuda", generator=g).to(dt)
    w32 = torch.randn(hidden, device="cuda", generator=g) * 0.1 + 1.0
    b32 = torch.randn(hidden, device="cuda", generator=g) * 0.1
    w, b = w32.to(dt), b32.to(dt)  # the peers take weights in the I/O dtype
    y = torch.empty_like(x)
    n, es = rows * hidden, x.element_size()
    lig = _liger()
    if name.startswith("bias_"):
        act = name[5:]
        ours = lambda: bias_activation.kernel(x, b32, act, out=y)  # noqa: E731
        chain = (lambda x, b: F.gelu(x + b)) if act == "gelu" else (lambda x, b: torch.clamp(torch.relu(x + b), max=6.0))
        return ours, chain, (x, b), None, 2 * n * es + hidden * 4
    skip = torch.randn(rows, hidden, device="cuda", generator=g).to(dt) if name.startswith("skip") else None
    layer = "layer" in name
    summed = with_sum(name)
    s_out = torch.empty_like(x) if summed else None
    w32, b32 = w.float(), b.float()  # the peers' weights, exactly
    io = io_weights and dt != torch.float32
    ours = lambda: skip_norm.kernel(x, skip, gamma=w32, beta=b32 if layer else None, norm="layer" if layer else "rms",  # noqa: E731
                                     epsilon=EPS, output_sum=summed, out=y, sum_out=s_out, variant=variant,
                                     gamma_io=w if io else None, beta_io=b if io and layer else None)
    liger = None
    if layer:
        if skip is None:
            chain, args = (lambda x, w, b: F.layer_norm(x, (hidden,), w, b, EPS)), (x, w, b)
            liger = lig and (lambda: lig["layer_norm"](x, w, b, EPS)[0])
        else:
            chain, args = (lambda x, r, w, b: F.layer_norm(x + r, (hidden,), w, b, EPS)), (x, skip, w, b)
    elif skip is None:
        chain, args = rms_chain, (x, w)
        liger = lig and (lambda: lig["rms_norm"](x, w, EPS, 0.0, "llama", None)[0])
    else:
        def chain(x, r, w):
            s = x + r
            return rms_chain(s, w), s
        args = (x, skip, w)
        liger = lig and (lambda: lig["fused_add_rms_norm"](x, skip, w, EPS, 0.0, "llama")[:2])
    nbytes = (2 + (skip is not None) + summed) * n * es + hidden * 4 * (2 if layer else 1)
    return ours, chain, args, liger, nbytes


def geglu_chain(x):  # diffusers' GEGLU with approximate="tanh"
    hidden, gate = x.chunk(2, -1)
    return hidden * F.gelu(gate, approximate="tanh")


def make_gated(name, rows, width, dt):
    """(ours, chain, chain_args, liger or None, bytes) for SwiGLU over two [rows, width] tensors or GEGLU
    over the halves of one [rows, 2 width] tensor; Liger's geglu_forward takes the halves as two
    tensors (made contiguous once, outside the timing)."""
    g = torch.Generator(device="cuda").manual_seed(0)
    y = torch.empty(rows, width, device="cuda", dtype=dt)
    lig = _liger()
    if name == "swiglu":
        a, b = (torch.randn(rows, width, device="cuda", generator=g).to(dt) for _ in range(2))
        ours = lambda: gated_activation.kernel(a, b, activation="silu", out=y)  # noqa: E731
        chain, args = (lambda a, b: F.silu(a) * b), (a, b)
        liger = lig and (lambda: lig["swiglu"](a, b)[2])
    else:
        x = torch.randn(rows, 2 * width, device="cuda", generator=g).to(dt)
        ours = lambda: gated_activation.kernel(x, activation="gelu_tanh", gate="second", out=y)  # noqa: E731
        chain, args = geglu_chain, (x,)
        gate, hidden = x[:, width:].contiguous(), x[:, :width].contiguous()
        liger = lig and (lambda: lig["geglu"](gate, hidden)[2])
    return ours, chain, args, liger, 3 * rows * width * y.element_size()


def make_group_norm(name, shape, dt, plan=None):
    """(ours, chain, chain_args, None, bytes) for GroupNorm (+ SiLU) over an N, C, H, W point; plan:
    one to force (trtplugins.ops.group_norm.kernel's), None: the plugin's."""
    g = torch.Generator(device="cuda").manual_seed(0)
    n, c = shape[:2]
    x = torch.randn(shape, device="cuda", generator=g).to(dt)
    w32 = torch.randn(c, device="cuda", generator=g) * 0.1 + 1.0
    b32 = torch.randn(c, device="cuda", generator=g) * 0.1
    w, b = w32.to(dt), b32.to(dt)
    y = torch.empty_like(x)
    act = "silu" if name.endswith("silu") else "none"
    ws = torch.empty(group_norm.workspace_size(n, GN_GROUPS), dtype=torch.uint8, device="cuda")
    ours = lambda: group_norm.kernel(x, num_groups=GN_GROUPS, gamma=w32, beta=b32, activation=act,  # noqa: E731
                                      epsilon=EPS, out=y, workspace=ws, plan=plan)
    if act == "silu":
        chain = lambda x, w, b: F.silu(F.group_norm(x, GN_GROUPS, w, b, EPS))  # noqa: E731
    else:
        chain = lambda x, w, b: F.group_norm(x, GN_GROUPS, w, b, EPS)  # noqa: E731
    return ours, chain, (x, w, b), None, 2 * x.numel() * x.element_size() + 2 * c * 4


def op_points(op, args, dt):
    """(rows, hidden, make_op result's arguments) of every point of an op: GroupNorm points are
    N, C, H, W shapes (rows = N * C, hidden = H * W); the others rows x hidden."""
    if op in GN_OPS:
        return [(s[0] * s[1], math.prod(s[2:]), s) for s in GN_SHAPES]
    if op in GATED_OPS:
        return [(rows, width, None) for rows, width in GATED_POINTS[op]]
    return [(rows, h, None) for rows, h in points(args, dt)]


def points(args, dt):
    es = torch.tensor([], dtype=dt).element_size()
    big = [(max(256, math.ceil(X_BYTES / (h * es) / 256) * 256), h) for h in list(args.hiddens) + list(args.odd)]
    return list(SMALL if args.small else ()) + big


