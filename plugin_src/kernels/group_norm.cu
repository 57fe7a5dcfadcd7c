// GroupNorm over NCHW: a group (n, g) is C/G * spatial contiguous elements. SD-sized inputs have
// few groups (N * G = 64 for 132 SMs) of many elements (10k-164k), so each group is split into
// chunks of one CTA each (groupNormPlan: ~4 CTAs per H200 SM in all, chunks of >= 4096 elements):
//   pass 1 (statsKernel): each CTA sums s - K and (s - K)^2 over its chunk, K = the group's first
//     value (shifted sums: no cancellation when the mean is far from 0), into workspace partials;
//   pass 2 (normKernel): each CTA merges its group's partials (fixed order: deterministic), then
//     normalizes its chunk, re-reading x, which is mostly still in L2. Pass 2 walks the CTAs in
//     reverse order, so it starts with the chunks pass 1 read last.
// 16-byte packs when every pointer is aligned and spatial % pack == 0 (a pack is then inside one
// channel), one element per access otherwise; pass 2 stores its packs evict-first. No atomics, nothing to zero: the workspace is fully
// written by pass 1 before pass 2 reads it (same stream). y and sum may alias x or skip (same
// shape): each thread loads an element before it stores it, and K travels through the workspace.
#include "common.cuh"
#include "group_norm.h"

#include <type_traits>

namespace trtp {
namespace {

using namespace detail;

constexpr int kThreads = 256;
constexpr int kMinBlocks = 4;         // CTAs per SM the registers allow (64 per thread)
// Packs in flight per thread: 32 bytes (2 packs), or 4 elements unaligned.
template <int VEC> constexpr int kUnroll = VEC == 1 ? 4 : 2;
constexpr int64_t kTargetCtas = 528;  // ~4 CTAs per SM on an H200 (132 SMs); more waves elsewhere
constexpr int64_t kMinChunk = 4096;   // elements: smaller groups are not split
constexpr int64_t kChunkAlign = 256;  // chunk starts stay 16-byte aligned for every dtype
// 32-bit offsets inside a chunk (with a stride of margin), channels per group and spatial sizes.
constexpr int64_t kMaxIndex = INT32_MAX - 8 * kThreads * 8;

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

// 16-bit packs converted two at a time (a pack stays in 4 registers; one at a time spilled).
template <class T> __device__ __forceinline__ float2 pairToFloat2(uint32_t w) {
    if constexpr (std::is_same_v<T, __half>) return __half22float2(*reinterpret_cast<const __half2*>(&w));
    else return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u)); // BF16
}

template <class T> __device__ __forceinline__ uint32_t float2ToPair(float a, float b) {
    if constexpr (std::is_same_v<T, __half>) {
        const __half2 h = __floats2half2_rn(a, b);
        return *reinterpret_cast<const uint32_t*>(&h);
    } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
        return *reinterpret_cast<const uint32_t*>(&h);
    }
}

template <class T, int VEC> __device__ __forceinline__ void toFloats(const Pack<T, VEC>& p, float (&f)[VEC]) {
    if constexpr (sizeof(T) == 2 && VEC % 2 == 0) {
        const uint32_t* w = reinterpret_cast<const uint32_t*>(p.v);
#pragma unroll
        for (int i = 0; i < VEC / 2; ++i) {
            const float2 v = pairToFloat2<T>(w[i]);
            f[2 * i] = v.x, f[2 * i + 1] = v.y;
        }
    } else {
        unpack(p, f);
    }
}

// 16-byte packs stored evict-first (st.global.cs): y and the sum are not read again here, while x
// still is (pass 2 re-reads it from L2; evicting x for y would send those reads to DRAM).
template <class T, int VEC> __device__ __forceinline__ void storeFloats(T* dst, const float (&f)[VEC]) {
    if constexpr (sizeof(T) == 2 && VEC == 8) {
        uint32_t w[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) w[i] = float2ToPair<T>(f[2 * i], f[2 * i + 1]);
        __stcs(reinterpret_cast<uint4*>(dst), make_uint4(w[0], w[1], w[2], w[3]));
    } else if constexpr (sizeof(T) == 4 && VEC == 4) {
        __stcs(reinterpret_cast<float4*>(dst), make_float4(f[0], f[1], f[2], f[3]));
    } else {
        store<T, VEC>(dst, f);
    }
}

// Sums of two values over the block; thread 0 gets them. `red`: 2 x 32 floats.
__device__ __forceinline__ float2 blockSum2(float a, float b, float (*red)[32]) {
    a = warpSum(a);
    b = warpSum(b);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) red[0][warp] = a, red[1][warp] = b;
    __syncthreads();
    if (warp == 0) {
        const int nw = blockDim.x >> 5;
        a = warpSum(lane < nw ? red[0][lane] : 0.f);
        b = warpSum(lane < nw ? red[1][lane] : 0.f);
    }
    return make_float2(a, b);
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

// Loads this thread's next kUnroll packs (those inside the chunk: in[u]) as s values;
// q[u]: the pack's channel in the group. Advances the walk.
template <class T, int VEC, GroupNormSkip SKIP>
__device__ __forceinline__ void loadPacks(const Gn<T>& a, const Chunk<T>& c, Walk& w, float (&s)[kUnroll<VEC>][VEC],
                                          bool (&in)[kUnroll<VEC>], int32_t (&q)[kUnroll<VEC>], int32_t (&off)[kUnroll<VEC>]) {
    Pack<T, VEC> px[kUnroll<VEC>], ps[kUnroll<VEC>];
#pragma unroll
    for (int u = 0; u < kUnroll<VEC>; ++u) {
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
    for (int u = 0; u < kUnroll<VEC>; ++u) {
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
// per-channel part), q its channel in the group, off its chunk-local offset.
template <class T, int VEC, GroupNormSkip SKIP, class F>
__device__ __forceinline__ void forEachPack(const Gn<T>& a, const Chunk<T>& c, F&& f) {
    Walk w(a, c, VEC);
    while (w.j < c.len) {
        float s[kUnroll<VEC>][VEC];
        bool in[kUnroll<VEC>];
        int32_t q[kUnroll<VEC>], off[kUnroll<VEC>];
        loadPacks<T, VEC, SKIP>(a, c, w, s, in, q, off);
#pragma unroll
        for (int u = 0; u < kUnroll<VEC>; ++u)
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
    const float mean = stats[0], rstd = stats[1];
    forEachPack<T, VEC, SKIP>(a, c, [&](const float (&s)[VEC], int32_t q, int32_t off) {
        const float sc = rstd * __ldg(c.gamma + q), sh = c.beta ? __ldg(c.beta + q) : 0.f;
        if (c.sum) storeFloats<T, VEC>(c.sum + off, s);
        float o[VEC];
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
            o[e] = fmaf(s[e] - mean, sc, sh);
            if (a.act == GroupNormAct::kSilu) o[e] = __fdividef(o[e], 1.f + __expf(-o[e])); // exp overflow -> 0
        }
        storeFloats<T, VEC>(c.y + off, o);
    });
}

template <class T, int VEC, GroupNormSkip SKIP> cudaError_t launchPasses(const Gn<T>& a, unsigned grid, cudaStream_t s) {
    const cudaError_t e = launchKernel(statsKernel<T, VEC, SKIP>, grid, kThreads, s, a);
    return e != cudaSuccess ? e : launchKernel(normKernel<T, VEC, SKIP>, grid, kThreads, s, a);
}

template <class T, int VEC> cudaError_t launchSkip(const Gn<T>& a, unsigned grid, cudaStream_t s) {
    switch (a.skipMode) {
    case GroupNormSkip::kNone: return launchPasses<T, VEC, GroupNormSkip::kNone>(a, grid, s);
    case GroupNormSkip::kFull: return launchPasses<T, VEC, GroupNormSkip::kFull>(a, grid, s);
    case GroupNormSkip::kPerChannel: return launchPasses<T, VEC, GroupNormSkip::kPerChannel>(a, grid, s);
    }
    return cudaErrorInvalidValue;
}

bool planOk(const GroupNormPlan& p, int64_t totalGroups, int64_t groupSize) {
    if (p.chunks < 1 || p.chunkLen < 1 || p.chunkLen % kChunkAlign) return false;
    if (p.chunks > groupSize || (p.chunks - 1) * p.chunkLen >= groupSize || p.chunks * p.chunkLen < groupSize) return false;
    return p.chunks == 1 || totalGroups * p.chunks <= kTargetCtas + totalGroups; // within the workspace bound
}

constexpr size_t kWsAlign = 256;
size_t roundUp(size_t v) { return (v + kWsAlign - 1) / kWsAlign * kWsAlign; }

} // namespace

GroupNormPlan groupNormPlan(int64_t n, int64_t groups, int64_t groupSize) {
    GroupNormPlan p;
    if (n < 1 || groups < 1 || groupSize < 1 || n > INT64_MAX / groups) return p;
    const int64_t total = n * groups;
    int64_t chunks = ceilDiv(kTargetCtas, total);
    const int64_t cap = groupSize / kMinChunk > 1 ? groupSize / kMinChunk : 1;
    if (chunks > cap) chunks = cap;
    p.chunkLen = ceilDiv(ceilDiv(groupSize, chunks), kChunkAlign) * kChunkAlign;
    p.chunks = ceilDiv(groupSize, p.chunkLen);
    return p;
}

// Partials: at most total * ceil(kTargetCtas / total) <= kTargetCtas + total (float2 each),
// then one shift per group; the shifts start 256-byte aligned.
size_t groupNormWorkspaceSize(int64_t n, int64_t groups) {
    if (n < 1 || groups < 1) return 0;
    const size_t total = size_t(n) * size_t(groups);
    return roundUp((size_t(kTargetCtas) + total) * sizeof(float2)) + roundUp(total * sizeof(float));
}

cudaError_t launchGroupNorm(DType dt, const GroupNormArgs& args, cudaStream_t stream) {
    const int64_t n = args.n, c = args.channels, hw = args.spatial, g = args.groups;
    if (n < 0 || c < 0 || hw < 0 || g < 1 || c % g || !(args.epsilon >= 0.f)) return cudaErrorInvalidValue;
    if (args.act != GroupNormAct::kNone && args.act != GroupNormAct::kSilu) return cudaErrorInvalidValue;
    if (args.skipMode != GroupNormSkip::kNone && args.skipMode != GroupNormSkip::kFull &&
        args.skipMode != GroupNormSkip::kPerChannel)
        return cudaErrorInvalidValue;
    if (n == 0 || c == 0 || hw == 0) return cudaSuccess;
    if (!args.x || !args.y || !args.gamma || (args.skipMode != GroupNormSkip::kNone && !args.skip)) return cudaErrorInvalidValue;
    if (n > INT64_MAX / c || n * c > INT64_MAX / hw) return cudaErrorInvalidValue;
    const int64_t total = n * g, groupSize = c / g * hw;
    GroupNormPlan plan = args.plan;
    if (!planOk(plan, total, groupSize)) plan = groupNormPlan(n, g, groupSize);
    if (plan.chunks < 1 || total > int64_t(INT32_MAX) / plan.chunks) return cudaErrorInvalidValue;
    if (hw > kMaxIndex || c / g > kMaxIndex || plan.chunkLen > kMaxIndex) return cudaErrorInvalidValue;
    const size_t partialBytes = roundUp(size_t((kTargetCtas + total) * int64_t(sizeof(float2))));
    if (!args.workspace || args.workspaceSize < groupNormWorkspaceSize(n, g) || (reinterpret_cast<uintptr_t>(args.workspace) & 7u))
        return cudaErrorInvalidValue;
    const int vecElems = dt == DType::kFloat32 ? 4 : 8;
    const bool vec = hw % vecElems == 0 && aligned16(args.x) && aligned16(args.y) && (!args.sum || aligned16(args.sum)) &&
                     (args.skipMode != GroupNormSkip::kFull || aligned16(args.skip));
    const unsigned grid = unsigned(total * plan.chunks);
    return dispatchDType(dt, [&](auto tag) -> cudaError_t {
        using T = decltype(tag);
        const Gn<T> a{static_cast<const T*>(args.x), static_cast<const T*>(args.skip), args.bias, args.gamma, args.beta,
                      static_cast<T*>(args.y), static_cast<T*>(args.sum), static_cast<float2*>(args.workspace),
                      reinterpret_cast<float*>(static_cast<char*>(args.workspace) + partialBytes), groupSize, g,
                      plan.chunks, plan.chunkLen, int32_t(hw), int32_t(c / g), args.epsilon, args.skipMode, args.act};
        return vec ? launchSkip<T, IoSize<T>::kVec>(a, grid, stream) : launchSkip<T, 1>(a, grid, stream);
    });
}

} // namespace trtp
