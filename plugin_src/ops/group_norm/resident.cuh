// GroupNorm's resident design, device code (resident.cu plans and launches): one kernel
// (residentKernel, resident_kernel.cuh), both layouts (channels-last's walks: resident_cl.cuh), run as one
// cooperative launch or as two. This file: the arguments, what both layouts share, channels-first's walks.
//
// Work split: the tensor is a row of units (an element channels-first, a pixel channels-last), cut into
// `grid` contiguous ranges of `per` units, one per CTA. A segment is what one set of statistics covers:
// a group (n, g) channels-first (contiguous), a sample n channels-last (its G groups interleaved in
// every pixel). A CTA's range meets one or a few segments: its pieces.
//
// Fused plan (one launch, cudaLaunchAttributeCooperative: every CTA resident at once, one per SM):
//   1. each CTA starts copying the last `resident` units of its range into shared memory (cp.async) and
//      asks L1 for its channels' weights,
//      sums the rest from global memory (16-byte loads marked evict-last: they are read again), then the
//      staged tail, and writes one partial per piece (and group): sums of d = s - K and d^2, K = the
//      segment's (group's) first value (shifted sums: no cancellation when the mean is far from 0);
//   2. grid-wide barrier;
//   3. each CTA merges its segments' partials in a fixed order (deterministic, identical in every CTA),
//      normalizes the staged tail from shared memory and the rest re-read from global (mostly L2), and
//      stores y (and s) evict-first.
//   Tensors that fit on chip (all units resident) move exactly what a copy moves.
// Cluster plan (fused, segLen a multiple of per, a segment's CTAs one thread-block cluster; channels-last
// windowed, the CTAs of a sample's window): step 2 is a cluster barrier (the partials it orders are in global
// memory, as for the grid barrier).
// Whole-segment plan (fused, each CTA's range whole segments: per a multiple of segLen): step 2 is a CTA
// barrier (no other CTA holds a piece of its segments) and its sums are its segments' statistics (no
// partials through the workspace), launched without the cooperative attribute, so any number of CTAs, not
// all resident at once. Channels-last it may also cut each sample's channels into
// `windows` windows of whole groups (a CTA per sample and window: a sample's groups spread over the GPU);
// a CTA then sees its window as a tensor of its own (pointers moved to its first channel, the row
// stride unchanged) and stages and sums only the window's channels.
// Two-launch plan (no cooperative launch): the same kernel, statistics then normalization, nothing
// resident, x read twice.
// Channels-first, a thread walks 16-byte packs of its piece (a pack stays in one channel); channels-last,
// a CTA is rows x packs threads: each thread owns one pack of channels of every `rows`-th pixel, sums
// per channel, and the CTA adds channels into groups through shared memory (any channels per group);
// a narrow plan (16-bit) gives each thread 8-byte packs, so its kernel fits two CTAs per SM.
// y and s may alias x or skip: each CTA reads every unit of its range before the barrier (resident) or
// re-reads it itself before storing it, and no CTA stores outside its range.
#pragma once
#include "common.cuh"
#include "group_norm.h"

#include <cooperative_groups.h>

#include "packs.cuh"

namespace trtp {
namespace {

using namespace detail;

constexpr int kThreads = 512;
constexpr int kNarrowVec = 4;               // 16-bit channels-last narrow plans: 8-byte packs
constexpr int64_t kMinUnitsBytes = 16384;   // a CTA gets at least this many bytes of x
constexpr int64_t kTwoLaunchCtas = 528;     // ~4 CTAs per SM on an H100/H200
constexpr int64_t kStaticSmem = 1024;       // the kernel's static shared memory, rounded up
constexpr int64_t kTwoLaunchSmem = 48 * 1024 - kStaticSmem; // without the opt-in
constexpr int64_t kMaxOffset = int64_t(1) << 31; // 32-bit element offsets inside a group / shared memory

template <class T> struct Gn {
    const T* x;
    const T* skip;
    const float* bias;
    const float* gamma;
    const float* beta;
    T* y;
    T* sum;
    float2* slots;  // [g * slotStride + cta + segment]: (sum d, sum d^2); g < groups channels-last, else 0
    int64_t slotStride; // CTAs + segments: a group's partials of consecutive CTAs are adjacent
    float* shifts;  // [segment * width + g]: K
    int64_t units, segLen, per, resident;
    FastDiv spatialDiv;          // channels-first: an element's channel in its group
    FastDiv groupsDiv;           // channels-first: a segment's sample
    FastDiv perDiv, segDiv;      // a unit's CTA and segment (units < 2^31, else unused)
    FastDiv widthDiv;            // a target's piece
    bool perDivOk;               // units < 2^31
    bool weights16;              // gamma (and beta) 16-byte aligned: a lane reads its channels' weights in float4s
    int32_t spatial, cpg, channels, cstride, groups; // channels-last windowed: a window's channels and groups
    int32_t lstride;             // channels-last: a staged pixel's elements (cstride, or a window's channels)
    int32_t windows;             // channels-last: CTAs per range, each a window of channels (1: all of them)
    int32_t packs, rows;         // channels-last: packs per pixel, pixels per CTA step
    int32_t split;               // channels-last: threads per channel summing its rows (clGroupSums)
    FastDiv packsDiv, cpgDiv;    // channels-last: a thread's pixel row; a channel's group
    FastDiv windowsDiv, channelsDiv; // channels-last: a CTA's range; a summing thread's row
    int32_t maxPieces;           // segments a CTA's range meets, at most
    float eps, invCount;         // invCount: 1 / elements per group
    GroupNormSkip skipMode;
    GroupNormAct act;
    bool stats, norm;            // the phases this launch runs (both: fused, a grid barrier between)
    bool local;                  // fused with whole segments per CTA: a CTA barrier between them
    int32_t cluster;             // fused, each segment's (window's) CTAs one cluster of this many: a cluster
                                 // barrier between them (0: none)
};

// 16-bit channels-last in 8-byte packs: the narrow plans, two CTAs per SM (64 registers, no spills).
template <class T, int VEC, GroupNormLayout L> constexpr bool kNarrow =
    L == GroupNormLayout::kChannelsLast && sizeof(T) == 2 && VEC == kNarrowVec;

// Where a pack comes from: shared memory (staged), or global memory read again later (evict-last) or
// for the last time (evict-first).
enum class Src { kShared, kKeep, kLast };

template <Src S, class T, int VEC> __device__ __forceinline__ Pack<T, VEC> fetch(const T* p) {
    if constexpr (S == Src::kShared || VEC * sizeof(T) != 16) return load<T, VEC>(p);
    else return loadL2<S == Src::kKeep, T, VEC>(p);
}

// A pack's x (+ its full skip) as FP32: s before the per-channel part.
template <class T, int VEC>
__device__ __forceinline__ void packValues(const Gn<T>& a, const Pack<T, VEC>& px, const Pack<T, VEC>& pk, float (&v)[VEC]) {
    toFloats(px, v);
    if (a.skipMode != GroupNormSkip::kFull) return;
    float k[VEC];
    toFloats(pk, k);
#pragma unroll
    for (int e = 0; e < VEC; ++e) v[e] += k[e];
}

// A CTA's view: its range, the staged tail, its pieces (the segments it meets) and the shared arrays.
template <class T> struct Cta {
    int64_t u0, u1, rs;   // range [u0, u1); units >= rs are staged
    int64_t first;        // first segment met
    int32_t pieces;       // segments met
    const T* sx;          // staged x (unit rs at sx[0])
    const T* sk;          // staged full skip
    int32_t cta;          // index of the range
    float2* red;          // channels-last: rows x lstride per-channel sums (of d, d^2)
    float* shift;         // pieces x width: K of each piece (and group)
    float* mean;          // pieces x width
    float* rstd;          // pieces x width
    float (*red2)[32];
    template <class A> __device__ __forceinline__ int64_t begin(const A& a, int32_t p) const {
        const int64_t b = (first + p) * a.segLen;
        return b > u0 ? b : u0;
    }
    template <class A> __device__ __forceinline__ int64_t end(const A& a, int32_t p) const {
        const int64_t e = (first + p + 1) * a.segLen;
        return e < u1 ? e : u1;
    }
};

// The per-channel part of s at channel c of sample n: bias + a per-channel skip.
template <bool CL, class T> __device__ __forceinline__ float channelAdd(const Gn<T>& a, int64_t n, int32_t c) {
    float v = a.bias ? __ldg(a.bias + c) : 0.f;
    if (a.skipMode == GroupNormSkip::kPerChannel) v += toFloat(a.skip[n * (CL ? a.cstride : a.channels) + c]);
    return v;
}

// K of segment s (and group g channels-last): the s value of the group's first element.
template <bool CL, class T> __device__ __forceinline__ float shiftOf(const Gn<T>& a, int64_t s, int32_t g) {
    const int64_t n = CL ? s : a.groupsDiv.div(uint32_t(s));
    const int32_t c = (CL ? g : int32_t(s - n * a.groups)) * a.cpg;
    const int64_t o = CL ? n * a.segLen * a.cstride + c : s * a.segLen;
    float k = toFloat(a.x[o]) + channelAdd<CL>(a, n, c);
    if (a.skipMode == GroupNormSkip::kFull) k += toFloat(a.skip[o]);
    return k;
}

// Every piece's K, loaded at once (the loads overlap the staging); the owner of a segment's first unit
// also writes it to the workspace (for a second launch). The caller's barrier makes them visible.
template <bool CL, class T> __device__ __forceinline__ void loadShifts(const Gn<T>& a, const Cta<T>& t) {
    const int32_t width = CL ? a.groups : 1;
    for (int32_t i = threadIdx.x; i < t.pieces * width; i += kThreads) {
        const int32_t p = int32_t(a.widthDiv.div(uint32_t(i))), g = i - p * width;
        const int64_t s = t.first + p;
        const float k = shiftOf<CL>(a, s, g);
        t.shift[i] = k;
        if (t.begin(a, p) == s * a.segLen) a.shifts[s * width + g] = k;
    }
}

// Asks L1 for the lines of p[lo, hi) (p may be null), a line per thread, each at an address inside the range: a
// hint, nothing waits for it.
__device__ __forceinline__ void prefetchL1(const float* p, int64_t lo, int64_t hi) {
    if (!p || hi <= lo) return;
    const uintptr_t begin = reinterpret_cast<uintptr_t>(p + lo), last = reinterpret_cast<uintptr_t>(p + hi - 1);
    const uintptr_t step = uintptr_t(kThreads) * 128;
    for (uintptr_t q = (begin & ~uintptr_t(127)) + uintptr_t(threadIdx.x) * 128; q <= last; q += step)
        asm volatile("prefetch.L1 [%0];" ::"l"(q < begin ? begin : q));
}

// The weights of the CTA's channels into L1 while its range is staged: the walks read them per pack, the
// normalization's after the barrier, where a first read from L2 would be one more round trip in the chain.
// Channels-first: its groups' channels (every channel where its range crosses a sample); channels-last: all
// (of its window).
template <bool CL, class T> __device__ __forceinline__ void prefetchWeights(const Gn<T>& a, const Cta<T>& t) {
    int64_t lo = 0, hi = a.channels;
    if constexpr (!CL) {
        const int64_t s0 = t.first, s1 = t.first + t.pieces - 1;
        const int64_t n0 = a.groupsDiv.div(uint32_t(s0)), n1 = a.groupsDiv.div(uint32_t(s1));
        if (n0 == n1) lo = (s0 - n0 * a.groups) * a.cpg, hi = (s1 - n1 * a.groups + 1) * a.cpg;
    }
    prefetchL1(a.gamma, lo, hi);
    prefetchL1(a.beta, lo, hi);
    prefetchL1(a.bias, lo, hi);
}

// The CTA whose range holds unit u, and its segment.
template <class T> __device__ __forceinline__ int64_t ctaOf(const Gn<T>& a, int64_t u) {
    return a.perDivOk ? int64_t(a.perDiv.div(uint32_t(u))) : u / a.per;
}
template <class T> __device__ __forceinline__ int64_t segmentOf(const Gn<T>& a, int64_t u) {
    return a.perDivOk ? int64_t(a.segDiv.div(uint32_t(u))) : u / a.segLen;
}

// A segment's (group's) mean and rstd from its sums of d = s - K and d^2 (K: shift).
template <class T> __device__ __forceinline__ float2 meanRstd(const Gn<T>& a, float shift, float s1, float s2) {
    const float d = s1 * a.invCount;
    float var = s2 * a.invCount - d * d;
    var = var < 0.f ? 0.f : var; // keeps NaN
    return make_float2(shift + d, rsqrtf(var + a.eps));
}

// Target k's (a piece's, and group's channels-last) mean and rstd from its segment's sums.
template <class T>
__device__ __forceinline__ void setStats(const Gn<T>& a, const Cta<T>& t, int32_t k, float shift, float s1, float s2) {
    const float2 m = meanRstd(a, shift, s1, s2);
    t.mean[k] = m.x, t.rstd[k] = m.y;
}

// Target k's sums over this CTA: into the workspace at `slot` for the CTAs sharing its segment, or, where
// the CTA holds whole segments (a.local), straight to its statistics (what gatherStats would make of them,
// without the workspace's round trip).
template <class T>
__device__ __forceinline__ void putPartial(const Gn<T>& a, const Cta<T>& t, int32_t k, int64_t slot, float2 r) {
    if (a.local) setStats(a, t, k, t.shift[k], r.x, r.y);
    else a.slots[slot] = r;
}

// Every piece's mean and rstd from the partials of the CTAs that share its segment, in a fixed order:
// kTP threads of one warp per (piece, group), each summing every kTP-th CTA, then a shuffle tree.
constexpr int kTP = 16;
template <bool CL, class T> __device__ __forceinline__ void gatherStats(const Gn<T>& a, const Cta<T>& t, bool fused) {
    const int32_t width = CL ? a.groups : 1, targets = a.local ? 0 : t.pieces * width; // a.local: set (putPartial)
    const int32_t sub = threadIdx.x % kTP;
    for (int32_t k0 = 0; k0 < targets; k0 += kThreads / kTP) {
        const int32_t k = k0 + int32_t(threadIdx.x) / kTP;
        float s1 = 0.f, s2 = 0.f, shift = 0.f;
        if (k < targets) {
            const int32_t p = int32_t(a.widthDiv.div(uint32_t(k))), g = k - p * width;
            const int64_t s = t.first + p;
            if (!fused) shift = a.shifts[s * width + g];
            const int64_t j0 = ctaOf(a, s * a.segLen), j1 = ctaOf(a, (s + 1) * a.segLen - 1);
#pragma unroll 4
            for (int64_t j = j0 + sub; j <= j1; j += kTP) {
                const float2 v = a.slots[g * a.slotStride + j + s];
                s1 += v.x, s2 += v.y;
            }
        }
#pragma unroll
        for (int o = kTP / 2; o > 0; o >>= 1) {
            s1 += __shfl_xor_sync(0xffffffffu, s1, o);
            s2 += __shfl_xor_sync(0xffffffffu, s2, o);
        }
        if (k < targets && sub == 0) setStats(a, t, k, fused ? t.shift[k] : shift, s1, s2);
    }
    __syncthreads();
}

// ---- channels-first -------------------------------------------------------------------------------

// A group's piece: elements [e0, e1) of segment (group) s.
struct Piece {
    int64_t s, e0, e1;
};

// Packs in flight per thread in the walks: streamed channels-first, staged (both layouts), streamed channels-last.
// sm_100's and sm_120's ptxas spill the 16-bit streaming kernels (up to 400 bytes a thread at their 128 registers)
// with Hopper's counts; with these, no resident kernel spills there.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
constexpr int kCfStreamPacks = 2, kStagedPacks = 1, kClStreamPacks = 1;
#else
constexpr int kCfStreamPacks = 4, kStagedPacks = 2, kClStreamPacks = 2;
#endif

// Calls f(s values, channel, element offset) for this thread's packs of elements [e0, e1) of group s,
// read from src (S: shared memory holding unit `base` at xs[0], or global), U packs in flight.
template <Src S, int U, class T, int VEC, class F>
__device__ __forceinline__ void cfWalk(const Gn<T>& a, const T* xs, const T* ks, int64_t base, const Piece& p, F&& f) {
    const int64_t n = a.groupsDiv.div(uint32_t(p.s)), gs = p.s * a.segLen;
    const int32_t c0 = int32_t(p.s - n * a.groups) * a.cpg;
    constexpr int64_t kStep = int64_t(kThreads) * VEC;
    for (int64_t o0 = p.e0 + int64_t(threadIdx.x) * VEC; o0 < p.e1; o0 += kStep * U) {
        Pack<T, VEC> px[U], pk[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t o = o0 + u * kStep;
            if (o < p.e1) {
                px[u] = fetch<S, T, VEC>(xs + (o - base));
                if (a.skipMode == GroupNormSkip::kFull) pk[u] = fetch<S, T, VEC>(ks + (o - base));
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t o = o0 + u * kStep;
            if (o >= p.e1) continue;
            float v[VEC];
            packValues(a, px[u], pk[u], v);
            const int32_t c = c0 + int32_t(a.spatialDiv.div(uint32_t(o - gs)));
            const float add = channelAdd<false>(a, n, c);
#pragma unroll
            for (int e = 0; e < VEC; ++e) v[e] += add;
            f(v, c, o);
        }
    }
}

// Calls f on the streamed part of a piece (global, read as S) and on its staged part (shared memory).
// STREAM false: every unit is staged (the plan's resident == per), so no global walk is compiled in.
template <Src S, bool STREAM, class T, int VEC, class F>
__device__ __forceinline__ void cfEach(const Gn<T>& a, const Cta<T>& t, const Piece& p, bool sharedFirst, F&& f) {
    const Piece global{p.s, p.e0, p.e1 < t.rs ? p.e1 : t.rs}, shared{p.s, p.e0 > t.rs ? p.e0 : t.rs, p.e1};
    if constexpr (STREAM)
        if (!sharedFirst && global.e0 < global.e1) cfWalk<S, kCfStreamPacks, T, VEC>(a, a.x, a.skip, 0, global, f);
    if (shared.e0 < shared.e1) cfWalk<Src::kShared, kStagedPacks, T, VEC>(a, t.sx, t.sk, t.rs, shared, f);
    if constexpr (STREAM)
        if (sharedFirst && global.e0 < global.e1) cfWalk<S, kCfStreamPacks, T, VEC>(a, a.x, a.skip, 0, global, f);
}

template <bool STREAM, class T, int VEC> __device__ void cfStats(const Gn<T>& a, const Cta<T>& t) {
    for (int32_t p = 0; p < t.pieces; ++p) {
        const float k = t.shift[p];
        float s1 = 0.f, s2 = 0.f;
        cfEach<Src::kKeep, STREAM, T, VEC>(a, t, {t.first + p, t.begin(a, p), t.end(a, p)}, false,
                                   [&](const float (&v)[VEC], int32_t, int64_t) {
#pragma unroll
                                       for (int e = 0; e < VEC; ++e) {
                                           const float d = v[e] - k;
                                           s1 += d;
                                           s2 = fmaf(d, d, s2);
                                       }
                                   });
        const float2 r = blockSum2(s1, s2, t.red2);
        if (threadIdx.x == 0) putPartial(a, t, p, t.cta + t.first + p, r);
    }
}

template <bool STREAM, class T, int VEC> __device__ void cfNorm(const Gn<T>& a, const Cta<T>& t) {
    for (int32_t p = t.pieces - 1; p >= 0; --p) {
        const float mean = t.mean[p], rstd = t.rstd[p];
        withSilu(a.act, [&](auto act) {
            cfEach<Src::kLast, STREAM, T, VEC>(a, t, {t.first + p, t.begin(a, p), t.end(a, p)}, true,
                                               [&](const float (&v)[VEC], int32_t c, int64_t o) {
                const float sc = rstd * __ldg(a.gamma + c), sh = a.beta ? __ldg(a.beta + c) : 0.f;
                storeNormalized<decltype(act)::value>(a.y, a.sum, o, v, mean, sc, sh);
            });
        });
    }
}

} // namespace
} // namespace trtp
