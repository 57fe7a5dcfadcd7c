#!/usr/bin/env python3
"""The GELU forms of plugin_src/kernels/activations.cuh (v13), checked on the CPU. GELU (erf), 16-bit outputs: fits Q (a
degree-DEG minimax polynomial in t / 2 for log2(exp(z^2) erfc(z) / t), t = 1 / (1 + z / 2)); GELU (tanh):
v / (1 + 2^(-2u log2 e)) for 0.5 v (1 + tanh(u)). Every finite FP16 and BF16 input runs through the
kernel's FP32 steps in numpy (an FMA rounded once; rcp and ex2 rounded and flushing results below 2^-126,
each also pushed by its MUFU error bound) and is rounded to the dtype, against the exact value in FP64
(trtplugins/reference.py, the project's numpy reference): the largest error in units of the
output's last place, and how many outputs are not the nearest value; the tanh form in FP32 too (relative
error over [-12, 12]). The forms the kernels have now run the same way (tanhf taken as correctly rounded).

  python3 benchmarks/experiments/gelu_emulate.py [DEG ...]     # needs numpy and scipy
"""
import sys
from pathlib import Path

import numpy as np
from scipy.special import erfcx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from trtplugins.reference import activation  # noqa: E402

f32, f64 = np.float32, np.float64
LOG2E = 1.4426950408889634
NR = [-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587,
      -0.82215223, 0.17087277]  # activations.cuh's FP32 erfc (Numerical Recipes' erfcc)


def fit(deg, zmax=9.5, n=20001, iters=80):
    """Coefficients (lowest first) of Q(t / 2) = log2(exp(z^2) erfc(z) / t), minimax by Lawson's iteration."""
    t = np.linspace(1 / (1 + zmax / 2), 1, n)
    f = np.log(erfcx(2 / t - 2) / t)
    w = np.ones_like(t)
    for _ in range(iters):
        c, *_ = np.linalg.lstsq(np.vander(t, deg + 1, increasing=True) * np.sqrt(w)[:, None], f * np.sqrt(w), rcond=None)
        e = np.abs(np.polyval(c[::-1], t) - f)
        w = w * (e + 1e-30) / (w * (e + 1e-30)).sum()
    print(f"degree {deg}: erfc relative error {e.max():.2e}")
    return [f32(ci * 2.0**i * LOG2E) for i, ci in enumerate(c)]


def fma(a, b, c):
    return (f64(a) * f64(b) + f64(c)).astype(f32)


def mufu(x, rel):  # a MUFU result, off by `rel` (its error bound, either sign)
    return (f64(x) * (1 + rel)).astype(f32)


def rcp(x, rel=0.0):
    return mufu((1.0 / f64(x)).astype(f32), rel)


def ex2ftz(x, rel=0.0):
    with np.errstate(over="ignore"):
        r = mufu(np.exp2(f64(x)).astype(f32), rel)
    return np.where(np.abs(r) < f32(2.0**-126), f32(0), r)


def rcpftz(x, rel=0.0):
    with np.errstate(divide="ignore"):
        r = rcp(x, rel)
    return np.where(np.abs(r) < f32(2.0**-126), f32(0), r)


def gelu16(v, d, er=0.0, ee=0.0):  # the patch's steps
    th = rcp(fma(np.abs(v), f32(0.70710678118654752), f32(2)), er)
    q = d[-1]
    for di in d[-2::-1]:
        q = fma(th, q, di)
    h = (th * ex2ftz(fma((v * f32(-0.5 * LOG2E)).astype(f32), v, q), ee)).astype(f32)
    return (v * np.where(v >= 0, (f32(1) - h).astype(f32), h)).astype(f32)


def gelu_now(v):  # the erfc form (16-bit: __fdividef, __expf)
    z = (np.abs(v) * f32(0.70710678118654752)).astype(f32)
    t = rcp(fma(f32(0.5), z, f32(1)))
    p = f32(NR[9])
    for c in NR[8::-1]:
        p = fma(t, p, f32(c))
    e = (t * ex2ftz((fma(-z, z, p) * f32(LOG2E)).astype(f32))).astype(f32)
    return ((f32(0.5) * v).astype(f32) * np.where(v >= 0, (f32(2) - e).astype(f32), e)).astype(f32)


K1 = f32(-2 * 0.7978845608028654 * LOG2E)  # -2u log2 e = v (K1 + K2 v^2)
K2 = f32(-2 * 0.7978845608028654 * 0.044715 * LOG2E)


def gelu_tanh(v, er=0.0, ee=0.0):  # the patch's steps
    e = ex2ftz((v * fma((v * v).astype(f32), K2, K1)).astype(f32), ee)
    return (v * rcpftz((f32(1) + e).astype(f32), er)).astype(f32)


def gelu_tanh_now(v):  # 0.5 v (1 + tanhf(u))
    u = (f32(0.79788456080286536) * fma((f32(0.044715) * v).astype(f32), (v * v).astype(f32), v)).astype(f32)
    return ((f32(0.5) * v).astype(f32) * (f32(1) + np.tanh(f64(u)).astype(f32)).astype(f32)).astype(f32)


def exact_tanh(v):
    return activation("gelu_tanh", f64(v))


def inputs(dt):
    bits = np.arange(65536, dtype=np.uint32)
    x = bits.astype(np.uint16).view(np.float16).astype(f32) if dt == "fp16" else (bits << 16).view(f32)
    return x[np.isfinite(x)]


def rounded(y, dt):
    if dt == "fp16":
        return y.astype(np.float16).astype(f64)
    u = y.view(np.uint32).astype(np.uint64)  # round to nearest even, to the upper 16 bits
    return (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(f32).astype(f64)


def ulps(got, ref, dt):
    lo, mant = (2.0**-14, 10) if dt == "fp16" else (2.0**-126, 7)
    return np.abs(got - ref) / 2.0 ** (np.floor(np.log2(np.maximum(np.abs(ref), lo))) - mant)


def exact_erf(v):
    return activation("gelu", f64(v))


def report(name, fn, dt, exact=exact_erf):
    x = inputs(dt)
    with np.errstate(all="ignore"):
        ref = exact(x)
        err = ulps(rounded(fn(x), dt), ref, dt)
    keep = np.abs(ref) >= 2.0**-122  # below: FP32's flush to zero
    e = err[keep]
    print(f"  {name:40s} {dt}: {x.size} inputs, max {e.max():.3f} ulp, not the nearest at {int((e > 0.5 + 1e-9).sum())}")


def bounds():  # (rcp, ex2) errors: none, then the MUFU bounds either way
    return [(0.0, 0.0)] + [(er, ee) for er in (-2.0**-23, 2.0**-23) for ee in (-2.0**-21, 2.0**-21)]


def main(degrees):
    for dt in ("fp16", "bf16"):
        for er, ee in bounds():
            report(f"tanh form, rcp {er:+.1e} ex2 {ee:+.1e}", lambda v: gelu_tanh(v, er, ee), dt, exact_tanh)
        report("tanh form (now)", gelu_tanh_now, dt, exact_tanh)
    x = np.linspace(-12, 12, 2_000_001).astype(f32)
    with np.errstate(all="ignore"):
        ref = exact_tanh(x)
        keep = np.abs(ref) >= 2.0**-122
        for name, fn in (("tanh form", gelu_tanh), ("tanh form (now)", gelu_tanh_now)):
            rel = np.abs(fn(x).astype(f64) - ref)[keep] / np.abs(ref[keep])
            small = np.abs(x[keep]) <= 3
            print(f"  {name:40s} fp32: relative error max {rel.max():.2e} (|x| <= 3: {rel[small].max():.2e})")
    for deg in degrees:
        d = fit(deg)
        for dt in ("fp16", "bf16"):
            for er, ee in bounds():
                report(f"erf form, rcp {er:+.1e} ex2 {ee:+.1e}", lambda v: gelu16(v, d, er, ee), dt)
    for dt in ("fp16", "bf16"):
        report("erf form (now)", gelu_now, dt)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [5])
