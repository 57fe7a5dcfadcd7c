// GroupNorm with each group held in registers, at most 4 packs per thread: the lean plans (no skip, bias or sum)
// of whole groups per CTA, and channels-first the cluster plans (SD's 8x8-64x64 latents). The resident kernel's
// statistics (sums about the group's first value, one block reduction) without staging through shared memory
// or its walks: a small launch waits on each warp's chain of instructions, not on bandwidth.
#pragma once
#include "resident.cuh"

namespace trtp {
namespace {

// The sums of a cluster of K CTAs: each publishes its own, all add the K in rank order (the same statistics in
// every CTA), then arrive on the cluster barrier; clusterDone() waits on it before the CTA exits, so none leaves
// while another may still read its shared memory.
template <int K> __device__ __forceinline__ float2 clusterSums(float2 own) {
#if __CUDA_ARCH__ >= 900
    __shared__ float2 part;
    const auto cluster = cooperative_groups::this_cluster();
    if (threadIdx.x == 0) part = own;
    cluster.sync();
    float2 sums = make_float2(0.f, 0.f);
#pragma unroll
    for (int j = 0; j < K; ++j) {
        const float2 p = *cluster.map_shared_rank(&part, j);
        sums.x += p.x, sums.y += p.y;
    }
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory"); // it only read
    return sums;
#else
    __trap(); // never launched: cluster plans run only where groupNormDevice() finds an sm_90+ image
    return own;
#endif
}

__device__ __forceinline__ void clusterDone() {
#if __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

// blockIdx.x: the group (segment n * groups + g), or channels-first with K > 1 a cluster of K CTAs per group,
// each 1/K of it; blockDim.x threads (a multiple of 32), R packs each.
// Channels-first: pack j of the group at j * VEC, thread t's packs t + r * blockDim.x. Channels-last (no pad):
// a pixel's group channels are a.packs packs; thread t holds pack t % packs of pixels t / packs + r * a.rows
// (a.packsDiv: a.packs), threads past a.rows * a.packs none.
template <class T, int VEC, int R, bool CL, int K = 1>
__global__ void __launch_bounds__(kThreads) inRegistersKernel(Gn<T> a) {
    static_assert(K == 1 || !CL, "clusters channels-first only");
    __shared__ float red2[2][32];
    const int64_t s = blockIdx.x / K, n = a.groupsDiv.div(uint32_t(s));
    const int32_t g = int32_t(s - n * a.groups), c0 = g * a.cpg, rank = int32_t(blockIdx.x % K);
    const int32_t in = rank * int32_t(a.segLen / K); // this CTA's first element in its group
    const int64_t group = CL ? n * a.spatial * int64_t(a.cstride) + c0 : s * a.segLen; // its first element
    const int64_t base = group + in;
    int32_t first = int32_t(threadIdx.x) * VEC, step = int32_t(blockDim.x) * VEC, len = int32_t(a.segLen / K), q = 0;
    if constexpr (CL) { // offsets in pixels x cstride; the thread's channels c0 + q .. c0 + q + VEC - 1
        const int32_t row = int32_t(a.packsDiv.div(threadIdx.x));
        q = (int32_t(threadIdx.x) - row * a.packs) * VEC;
        len = a.spatial * a.cstride;
        first = row < a.rows ? row * a.cstride + q : len; // none past the rows
        step = a.rows * a.cstride;
    }
    const T* x = a.x + base;
    Pack<T, VEC> px[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int32_t i = first + r * step;
        if (i < len) px[r] = fetch<Src::kLast, T, VEC>(x + i); // read once
    }
    const float k = toFloat(a.x[group]);
    float s1 = 0.f, s2 = 0.f;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        if (first + r * step >= len) continue;
        float v[VEC];
        toFloats(px[r], v);
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
            const float d = v[e] - k;
            s1 += d;
            s2 = fmaf(d, d, s2);
        }
    }
    float2 sums = blockSum2(s1, s2, red2);
    if constexpr (K > 1) sums = clusterSums<K>(sums);
    const float2 m = meanRstd(a, k, sums.x, sums.y);
    const float mean = m.x, rstd = m.y;
    float sc[VEC], sh[VEC]; // channels-last: the thread's channels' scale and shift
    if constexpr (CL) {
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
            sc[e] = rstd * __ldg(a.gamma + c0 + q + e);
            sh[e] = a.beta ? __ldg(a.beta + c0 + q + e) : 0.f;
        }
    }
    withSilu(a.act, [&](auto act) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int32_t i = first + r * step;
            if (i >= len) continue;
            float v[VEC], w[VEC];
            toFloats(px[r], v);
            if constexpr (!CL) {
                const int32_t c = c0 + int32_t(a.spatialDiv.div(uint32_t(in + i)));
                const float gs = rstd * __ldg(a.gamma + c), bs = a.beta ? __ldg(a.beta + c) : 0.f;
#pragma unroll
                for (int e = 0; e < VEC; ++e) sc[e] = gs, sh[e] = bs;
            }
#pragma unroll
            for (int e = 0; e < VEC; ++e) {
                w[e] = fmaf(v[e] - mean, sc[e], sh[e]);
                if constexpr (decltype(act)::value) w[e] = silu(w[e]);
            }
            storeFloats<T, VEC>(a.y + base + i, w);
        }
    });
    if constexpr (K > 1) clusterDone();
}

} // namespace
} // namespace trtp
