// The activations on the device, FP32 in and out: shared by every kernel that applies one.
#pragma once
#include <cuda_runtime.h>

#include "types.h"

namespace trtp {
namespace detail {

// ACCURATE: FP32 I/O (GELU exact to FP32 rounding, its tail included); 16-bit I/O cheaper forms, accurate
// at the output's precision.
template <Activation A, bool ACCURATE> __device__ __forceinline__ float activate(float v) {
    if constexpr (A == Activation::kIdentity) {
        return v;
    } else if constexpr (A == Activation::kRelu) {
        return fmaxf(v, 0.f);
    } else if constexpr (A == Activation::kRelu6) {
        return fminf(fmaxf(v, 0.f), 6.f);
    } else if constexpr (A == Activation::kGelu && !ACCURATE) {
        // 16-bit outputs: erfc(z) / 2 = (t / 2) 2^Q(t / 2) with t = 1 / (1 + z / 2), Q a degree-5 minimax fit
        // of log2(exp(z^2) erfc(z) / t) on z in [0, 9.5] (erfc's relative error < 8e-6). Every FP16 and
        // BF16 input, emulated with the MUFU errors: within 0.52 ulp of the exact GELU in FP16 (394 of 63488
        // not the nearest value), 0.5 in BF16. SASS: 14 instructions, the erfc form below 28 (its __fdividef
        // and __expf guard subnormal operands, which these never are).
        float th; // t / 2
        asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(th) : "f"(fmaf(fabsf(v), 0.70710678118654752f, 2.f)));
        float q = fmaf(th, 10.5628042f, -16.3708897f);
        q = fmaf(th, q, 5.47665644f);
        q = fmaf(th, q, 1.46828127f);
        q = fmaf(th, q, 2.9373703f);
        q = fmaf(th, q, -1.82723355f);
        float h; // 2^(Q - z^2 log2 e)
        asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(h) : "f"(fmaf(v * -0.72134752044448170f, v, q)));
        h *= th; // erfc(|v| / sqrt 2) / 2
        return v * (v >= 0.f ? 1.f - h : h);
    } else if constexpr (A == Activation::kGelu) { // FP32 outputs
        // 0.5 v (1 + erf(v / sqrt 2)) = 0.5 v erfc(-v / sqrt 2), erfc(z) for z >= 0 by the Chebyshev
        // fit of Numerical Recipes' erfcc (relative error < 1.2e-7 everywhere, so the negative tail
        // is exact to FP32 rounding, not only in absolute terms) and branch-free (erff's branches
        // diverge on real data).
        const float z = fabsf(v) * 0.70710678118654752f;
        const float t = __fdividef(1.f, fmaf(0.5f, z, 1.f));
        float p = fmaf(t, 0.17087277f, -0.82215223f);
        p = fmaf(t, p, 1.48851587f);
        p = fmaf(t, p, -1.13520398f);
        p = fmaf(t, p, 0.27886807f);
        p = fmaf(t, p, -0.18628806f);
        p = fmaf(t, p, 0.09678418f);
        p = fmaf(t, p, 0.37409196f);
        p = fmaf(t, p, 1.00002368f);
        p = fmaf(t, p, -1.26551223f);
        const float arg = fmaf(-z, z, p);
        const float e = t * expf(arg); // erfc(z)
        return 0.5f * v * (v >= 0.f ? 2.f - e : e);
    } else if constexpr (A == Activation::kGeluTanh) {
        // 0.5 v (1 + tanh(u)) = v sigmoid(2u) = v / (1 + 2^(-2u log2 e)), 2u = sqrt(8 / pi) (v + 0.044715 v^3):
        // no cancellation where tanh(u) nears -1 (1 + tanhf(u) is 0 from x = -5.16 in FP32, where GELU is
        // -7.7e-8, and 256 ulp off in BF16 at -6.2; experiments/gelu_emulate.py); SASS: 7 instructions, not
        // 21. Outputs flush to zero from x = -10.0 (|GELU| < 1.2e-37).
        float e, r;
        asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(v * fmaf(v * v, -0.102943242f, -2.30220819f)));
        asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.f + e));
        return v * r;
    } else if constexpr (A == Activation::kSilu) {
        // v / (1 + e^-v) with MUFU ex2 and rcp directly: 5 instructions, not 9 (__expf and __fdividef guard
        // subnormal results, which change nothing here: 1 + a subnormal is 1, and v times a flushed
        // reciprocal is the 0 __fdividef returns). exp overflow -> divisor inf -> 0: the right limit.
        float e, r;
        asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(v * -1.4426950408889634f));
        asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.f + e));
        return v * r;
    } else if constexpr (A == Activation::kQuickGelu) {
        return __fdividef(v, 1.f + __expf(-1.702f * v));
    } else {
        return v * fminf(fmaxf(v + 3.f, 0.f), 6.f) * (1.f / 6.f);
    }
}

} // namespace detail
} // namespace trtp
