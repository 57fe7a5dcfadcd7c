// GroupNorm over NCHW: a group (n, g) is C/G * spatial contiguous elements. SD-sized inputs have
// few groups (N * G = 64 for 132 SMs) of many elements (10k-164k), so each group is split into
// chunks of one CTA each. Two paths; the plugin picks one when it is configured (groupNormConfigure):
//
// Cluster path (sm_90+, one launch, clusterKernel): a group's CTAs form one thread-block cluster
// (1..8 CTAs; 16 only where 8 cannot hold a group), grid = groups * cluster size. Each CTA
//   1. copies its chunk of x (and of a full skip) into shared memory (16-byte cp.async when aligned),
//   2. computes its chunk's exact count, mean and M2: each thread two passes over its own elements
//      (mean, then the sum of squared deviations from it: no cancellation when the mean is far from
//      0), then Chan merges over the block in a fixed tree order,
//   3. publishes them in its shared memory; cluster.sync(); every warp of every CTA reads the
//      cluster's partials through distributed shared memory and merges them in the same fixed
//      order (bit-identical statistics everywhere), then arrives on the cluster barrier,
//   4. normalizes its chunk from shared memory, stores y (and s) evict-first, and waits on the
//      barrier before it exits, so no CTA leaves while another may still read its partial.
//   Global traffic: x (+ skip) read once, y (+ s) written once. A CTA has its whole chunk in shared
//   memory before it stores anything and touches no other chunk: y and s may alias x or skip.
//
// Two-launch path (every GPU; groups a cluster cannot hold; few groups that two launches spread
// over more SMs). groupNormPlan: ~4 CTAs per H200 SM in all, chunks of >= 4096 elements:
//   pass 1 (statsKernel): each CTA sums s - K and (s - K)^2 over its chunk, K = the group's first
//     value (shifted sums: no cancellation when the mean is far from 0), into workspace partials;
//   pass 2 (normKernel): each CTA merges its group's partials (fixed order: deterministic), then
//     normalizes its chunk, re-reading x, which is mostly still in L2. Pass 2 walks the CTAs in
//     reverse order, so it starts with the chunks pass 1 read last.
//   No atomics, nothing to zero: the workspace is fully written by pass 1 before pass 2 reads it
//   (same stream). y and s may alias x or skip: each thread loads an element before it stores it,
//   and K travels through the workspace.
// Both: 16-byte packs when every pointer is aligned and spatial % pack == 0 (a pack is then inside
// one channel), one element per access otherwise; y and s stored evict-first.
#pragma once
#include "common.cuh"
#include "group_norm.h"

#include <cooperative_groups.h>

#include <type_traits>

#include "packs.cuh"

namespace trtp {
namespace {

using namespace detail;

constexpr int kThreads = 256;
constexpr int kMinBlocks = 4;         // CTAs per SM the registers allow (64 per thread)
// Packs in flight per thread: 32 bytes (2 packs), or 4 elements unaligned; on sm_100+ one 16-byte pack of 16-bit
// values (their ptxas spills those kernels at the 64-register cap with two).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
template <int VEC> constexpr int kUnroll = VEC == 1 ? 4 : VEC == 8 ? 1 : 2;
#else
template <int VEC> constexpr int kUnroll = VEC == 1 ? 4 : 2;
#endif
constexpr int64_t kTargetCtas = 528;  // ~4 CTAs per SM on an H200 (132 SMs); more waves elsewhere
constexpr int64_t kMinChunk = 4096;   // elements: smaller groups are not split
constexpr int64_t kChunkAlign = 256;  // chunk starts stay 16-byte aligned for every dtype
// 32-bit offsets inside a chunk (with a stride of margin), channels per group and spatial sizes.
constexpr int64_t kMaxIndex = INT32_MAX - 8 * kThreads * 8;
// Cluster path: sizes, and the CTAs per SM it aims at in all (the register limit allows kMinBlocks).
constexpr int64_t kPortableCluster = 8;
constexpr int64_t kMaxCluster = 16;
constexpr int64_t kClusterCtasPerSm = 3;
constexpr int64_t kSmemReserve = 1024;      // shared memory the driver keeps per CTA
constexpr int64_t kStaticSmemBound = 256;   // clusterKernel's static shared memory, rounded up
constexpr int64_t kMaxClusterSmem = 232448 - kStaticSmemBound; // 227 KB opt-in (sm_90, sm_100), less static

template <class T> struct Gn {
    const T* x;
    const T* skip;
    const float* bias;
    const float* gamma;
    const float* beta;
    T* y;
    T* sum;
    float2* partials; // [groups total][chunks]
    float* shifts;    // [groups total]
    int64_t groupSize, groupsPerSample, chunks, chunkLen;
    int32_t spatial, cpg; // < 2^31 (checked at launch)
    float eps;
    GroupNormSkip skipMode;
    GroupNormAct act;
};

// One CTA's chunk (pass 2 walks the CTAs backwards): pointers to its first element (x, skip, y,
// sum) and to its group's first channel (bias, gamma, beta; a per-channel skip). 32-bit offsets
// from here on: a chunk is < 2^31 elements.
template <class T> struct Chunk {
    const T* x;
    const T* skip; // kFull: at the chunk; kPerChannel: the group's first (n, c)
    const float* bias;
    const float* gamma;
    const float* beta;
    T* y;
    T* sum;
    int64_t group, begin; // begin: the chunk's first element in its group
    int32_t len;

    __device__ __forceinline__ Chunk(const Gn<T>& a, int64_t cta) {
        group = cta / a.chunks;
        begin = (cta - group * a.chunks) * a.chunkLen;
        const int64_t base = group * a.groupSize + begin;
        const int64_t left = a.groupSize - begin;
        len = int32_t(left < a.chunkLen ? left : a.chunkLen);
        const int64_t chan0 = (group % a.groupsPerSample) * a.cpg;
        x = a.x + base;
        skip = a.skipMode == GroupNormSkip::kFull ? a.skip + base
               : a.skipMode == GroupNormSkip::kPerChannel ? a.skip + group * a.cpg : nullptr;
        bias = a.bias ? a.bias + chan0 : nullptr;
        gamma = a.gamma + chan0;
        beta = a.beta ? a.beta + chan0 : nullptr;
        y = a.y + base;
        sum = a.sum ? a.sum + base : nullptr;
    }
};

// Position (channel q in the group, offset r in the channel) of an element, stepped without dividing.
struct Cursor {
    int32_t q, r;
    __device__ __forceinline__ void step(int32_t dq, int32_t dr, int32_t spatial) {
        q += dq;
        r += dr;
        if (r >= spatial) r -= spatial, ++q;
    }
};

// The per-channel part of s: bias[c] + skip[n, c].
template <class T, GroupNormSkip SKIP> __device__ __forceinline__ float channelAdd(const Chunk<T>& c, int32_t q) {
    float v = 0.f;
    if (c.bias) v += __ldg(c.bias + q);
    if constexpr (SKIP == GroupNormSkip::kPerChannel) v += toFloat(c.skip[q]);
    return v;
}

// This thread's walk over its chunk: packs at j, j + stride, ... (chunk-local element offsets).
struct Walk {
    int32_t j, stride, dq, dr;
    Cursor cur;
    template <class T> __device__ __forceinline__ Walk(const Gn<T>& a, const Chunk<T>& c, int vec) {
        j = int32_t(threadIdx.x) * vec;
        stride = int32_t(blockDim.x) * vec;
        const int64_t at = c.begin + j; // position in the group (one 64-bit division per thread)
        cur = Cursor{int32_t(at / a.spatial), int32_t(at % a.spatial)};
        dq = stride / a.spatial;
        dr = stride % a.spatial;
    }
};

// Loads this thread's next U packs (those inside the chunk: in[u]) as s values;
// q[u]: the pack's channel in the group. Advances the walk.
template <class T, int VEC, GroupNormSkip SKIP, int U>
__device__ __forceinline__ void loadPacks(const Gn<T>& a, const Chunk<T>& c, Walk& w, float (&s)[U][VEC], bool (&in)[U],
                                          int32_t (&q)[U], int32_t (&off)[U]) {
    Pack<T, VEC> px[U], ps[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
        off[u] = w.j;
        in[u] = w.j < c.len;
        q[u] = w.cur.q;
        w.cur.step(w.dq, w.dr, a.spatial);
        w.j += in[u] ? w.stride : 0; // stays < 2^31
        if (in[u]) {
            px[u] = load<T, VEC>(c.x + off[u]);
            if (SKIP == GroupNormSkip::kFull) ps[u] = load<T, VEC>(c.skip + off[u]);
        }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
        if (!in[u]) continue;
        toFloats(px[u], s[u]);
        const float add = channelAdd<T, SKIP>(c, q[u]);
        if constexpr (SKIP == GroupNormSkip::kFull) {
            float k[VEC];
            toFloats(ps[u], k);
#pragma unroll
            for (int e = 0; e < VEC; ++e) s[u][e] += k[e];
        }
#pragma unroll
        for (int e = 0; e < VEC; ++e) s[u][e] += add;
    }
}

// Calls f(s, q, off) for each of this thread's packs of the chunk: s its values (x + skip + the
// per-channel part), q its channel in the group, off its chunk-local offset. U packs loaded at a
// time (from global memory: kUnroll; from shared memory one is enough, and needs fewer registers).
template <class T, int VEC, GroupNormSkip SKIP, int U = kUnroll<VEC>, class F>
__device__ __forceinline__ void forEachPack(const Gn<T>& a, const Chunk<T>& c, F&& f) {
    Walk w(a, c, VEC);
    while (w.j < c.len) {
        float s[U][VEC];
        bool in[U];
        int32_t q[U], off[U];
        loadPacks<T, VEC, SKIP, U>(a, c, w, s, in, q, off);
#pragma unroll
        for (int u = 0; u < U; ++u)
            if (in[u]) f(s[u], q[u], off[u]);
    }
}

template <class T, int VEC, GroupNormSkip SKIP> __global__ void __launch_bounds__(kThreads, kMinBlocks) statsKernel(Gn<T> a) {
    __shared__ float red[2][32];
    const Chunk<T> c(a, blockIdx.x);
    // K: the group's first s value (every CTA of the group computes the same one).
    const T* gx = c.x - c.begin;
    float k = toFloat(gx[0]) + channelAdd<T, SKIP>(c, 0);
    if constexpr (SKIP == GroupNormSkip::kFull) k += toFloat((c.skip - c.begin)[0]);
    float s1 = 0.f, s2 = 0.f;
    forEachPack<T, VEC, SKIP>(a, c, [&](const float (&s)[VEC], int32_t, int32_t) {
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
            const float d = s[e] - k;
            s1 += d;
            s2 = fmaf(d, d, s2);
        }
    });
    const float2 t = blockSum2(s1, s2, red);
    if (threadIdx.x == 0) {
        a.partials[blockIdx.x] = t;
        if (c.begin == 0) a.shifts[c.group] = k;
    }
}

// Normalizes this CTA's chunk: y = act((s - mean) * rstd * gamma + beta), and s when asked for.
template <class T, int VEC, GroupNormSkip SKIP, int U = kUnroll<VEC>>
__device__ __forceinline__ void normalize(const Gn<T>& a, const Chunk<T>& c, float mean, float rstd) {
    withSilu(a.act, [&](auto act) {
        forEachPack<T, VEC, SKIP, U>(a, c, [&](const float (&s)[VEC], int32_t q, int32_t off) {
            const float sc = rstd * __ldg(c.gamma + q), sh = c.beta ? __ldg(c.beta + q) : 0.f;
            storeNormalized<decltype(act)::value>(c.y, c.sum, off, s, mean, sc, sh);
        });
    });
}

template <class T, int VEC, GroupNormSkip SKIP> __global__ void __launch_bounds__(kThreads, kMinBlocks) normKernel(Gn<T> a) {
    __shared__ float red[2][32];
    __shared__ float stats[2];
    const Chunk<T> c(a, int64_t(gridDim.x) - 1 - blockIdx.x);
    // Merge the group's partials: s1 = sum (s - K), s2 = sum (s - K)^2 over the whole group.
    float s1 = 0.f, s2 = 0.f;
    const float2* part = a.partials + c.group * a.chunks;
    for (int32_t j = threadIdx.x; j < a.chunks; j += blockDim.x) {
        const float2 p = part[j];
        s1 += p.x;
        s2 += p.y;
    }
    const float2 t = blockSum2(s1, s2, red);
    if (threadIdx.x == 0) {
        const float inv = 1.f / float(a.groupSize);
        const float d = t.x * inv;
        float var = t.y * inv - d * d;
        var = var < 0.f ? 0.f : var; // keeps NaN
        stats[0] = a.shifts[c.group] + d;
        stats[1] = rsqrtf(var + a.eps);
    }
    __syncthreads();
    normalize<T, VEC, SKIP>(a, c, stats[0], stats[1]);
}

// Count, mean and sum of squared deviations from the mean of some values.
struct Moments {
    float n, mean, m2;
};
static_assert(sizeof(Moments) * (kThreads / 32 + 1) <= kStaticSmemBound, "clusterKernel's static shared memory");

// The cluster path's device code exists for sm_90+ (and the host pass); older architectures get a stub.
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
#define TRTP_GN_CLUSTERS 1

// Chan et al.'s merge of two sets' moments (exact for empty sets).
__device__ __forceinline__ Moments merge(const Moments& a, const Moments& b) {
    if (b.n == 0.f) return a;
    if (a.n == 0.f) return b;
    const float n = a.n + b.n, d = b.mean - a.mean, f = b.n / n;
    return {n, fmaf(d, f, a.mean), fmaf(d * d, a.n * f, a.m2 + b.m2)};
}

// Lane 0 gets the merge of the warp's 32 moments, always in the same tree order.
__device__ __forceinline__ Moments warpMerge(Moments m) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const Moments other{__shfl_down_sync(0xffffffffu, m.n, o), __shfl_down_sync(0xffffffffu, m.mean, o),
                            __shfl_down_sync(0xffffffffu, m.m2, o)};
        m = merge(m, other);
    }
    return m;
}

#endif // sm_90+

// The cluster path (see the top of this file): one cluster of a.chunks CTAs per group, the chunk of
// x at the start of the dynamic shared memory, a full skip's after it (a.chunkLen elements each).
template <class T, int VEC, GroupNormSkip SKIP>
__global__ void __launch_bounds__(kThreads, kMinBlocks) clusterKernel(Gn<T> a) {
#ifndef TRTP_GN_CLUSTERS
    __trap(); // never launched: groupNormDevice() offers clusters only with an sm_90+ image
#else
    extern __shared__ __align__(16) unsigned char tile[];
    __shared__ Moments red[kThreads / 32];
    __shared__ Moments part;
    const auto cluster = cooperative_groups::this_cluster();
    Chunk<T> c(a, blockIdx.x);
    T* sx = reinterpret_cast<T*>(tile);
    stage<T, VEC>(sx, c.x, c.len);
    c.x = sx;
    if constexpr (SKIP == GroupNormSkip::kFull) {
        T* sk = sx + a.chunkLen;
        stage<T, VEC>(sk, c.skip, c.len);
        c.skip = sk;
    }
    waitStaged();
    // This thread's moments: two passes over its elements (in shared memory now), then the block's.
    float sum = 0.f;
    int32_t count = 0;
    forEachPack<T, VEC, SKIP, 1>(a, c, [&](const float (&s)[VEC], int32_t, int32_t) {
#pragma unroll
        for (int e = 0; e < VEC; ++e) sum += s[e];
        count += VEC;
    });
    Moments m{float(count), count ? sum / float(count) : 0.f, 0.f};
    forEachPack<T, VEC, SKIP, 1>(a, c, [&](const float (&s)[VEC], int32_t, int32_t) {
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
            const float d = s[e] - m.mean;
            m.m2 = fmaf(d, d, m.m2);
        }
    });
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    m = warpMerge(m);
    if (lane == 0) red[warp] = m;
    __syncthreads();
    if (warp == 0) {
        m = warpMerge(lane < kThreads / 32 ? red[lane] : Moments{0.f, 0.f, 0.f});
        if (lane == 0) part = m;
    }
    cluster.sync(); // every CTA's partial published
    // The group's moments: each warp merges the cluster's partials in rank order (identical everywhere).
    const int ranks = int(cluster.num_blocks());
    m = warpMerge(lane < ranks ? *cluster.map_shared_rank(&part, lane) : Moments{0.f, 0.f, 0.f});
    const float mean = __shfl_sync(0xffffffffu, m.mean, 0);
    const float var = __shfl_sync(0xffffffffu, m.m2, 0) / __shfl_sync(0xffffffffu, m.n, 0);
    auto done = cluster.barrier_arrive(); // this thread reads no other CTA's shared memory from here
    normalize<T, VEC, SKIP, 1>(a, c, mean, rsqrtf(var + a.eps));
    cluster.barrier_wait(std::move(done)); // nobody reads this CTA's partial any more
#endif
}

} // namespace
} // namespace trtp
