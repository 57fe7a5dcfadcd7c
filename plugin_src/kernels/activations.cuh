// The activations on the device, FP32 in and out: shared by every kernel that applies one.
#pragma once
#include <cuda_runtime.h>

#include "types.h"

namespace trtp {
namespace detail {

// ACCURATE: FP32 I/O takes the accurate expf where it matters (GELU's tail); 16-bit I/O the fast one.
template <Activation A, bool ACCURATE> __device__ __forceinline__ float activate(float v) {
    if constexpr (A == Activation::kIdentity) {
        return v;
    } else if constexpr (A == Activation::kRelu) {
        return fmaxf(v, 0.f);
    } else if constexpr (A == Activation::kRelu6) {
        return fminf(fmaxf(v, 0.f), 6.f);
    } else if constexpr (A == Activation::kGelu) {
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
        const float e = t * (ACCURATE ? expf(arg) : __expf(arg)); // erfc(z)
        return 0.5f * v * (v >= 0.f ? 2.f - e : e);
    } else if constexpr (A == Activation::kGeluTanh) {
        const float u = 0.79788456080286536f * fmaf(0.044715f * v, v * v, v);
        return 0.5f * v * (1.f + tanhf(u));
    } else if constexpr (A == Activation::kSilu) {
        return __fdividef(v, 1.f + __expf(-v)); // exp overflow -> divisor inf -> 0: the right limit
    } else if constexpr (A == Activation::kQuickGelu) {
        return __fdividef(v, 1.f + __expf(-1.702f * v));
    } else {
        return v * fminf(fmaxf(v + 3.f, 0.f), 6.f) * (1.f / 6.f);
    }
}

} // namespace detail
} // namespace trtp
