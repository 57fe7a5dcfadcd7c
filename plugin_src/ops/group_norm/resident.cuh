// GroupNorm's resident design, device code (resident.cu plans and launches): one kernel
// (residentKernel), both layouts, run as one cooperative launch or as two.
//
// Work split: the tensor is a row of units (an element channels-first, a pixel channels-last), cut into
// `grid` contiguous ranges of `per` units, one per CTA. A segment is what one set of statistics covers:
// a group (n, g) channels-first (contiguous), a sample n channels-last (its G groups interleaved in
// every pixel). A CTA's range meets one or a few segments: its pieces.
//
// Fused plan (one launch, cudaLaunchAttributeCooperative: every CTA resident at once, one per SM):
//   1. each CTA starts copying the last `resident` units of its range into shared memory (cp.async),
//      sums the rest from global memory (16-byte loads marked evict-last: they are read again), then the
//      staged tail, and writes one partial per piece (and group): sums of d = s - K and d^2, K = the
//      segment's (group's) first value (shifted sums: no cancellation when the mean is far from 0);
//   2. grid-wide barrier;
//   3. each CTA merges its segments' partials in a fixed order (deterministic, identical in every CTA),
//      normalizes the staged tail from shared memory and the rest re-read from global (mostly L2), and
//      stores y (and s) evict-first.
//   Tensors that fit on chip (all units resident) move exactly what a copy moves.
// Whole-segment plan (fused, each CTA's range whole segments: per a multiple of segLen): step 2 is a CTA
// barrier (no other CTA holds a piece of its segments), launched without the cooperative attribute, so
// any number of CTAs, not all resident at once. Channels-last it may also cut each sample's channels into
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

__device__ __forceinline__ float silu(float v) { return __fdividef(v, 1.f + __expf(-v)); } // exp overflow -> 0

// f(std::true_type) where the activation is SiLU, else f(std::false_type): one branch per walk, not one
// per element.
template <class F> __device__ __forceinline__ void withSilu(GroupNormAct act, F&& f) {
    if (act == GroupNormAct::kSilu) f(std::true_type{});
    else f(std::false_type{});
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
    int32_t cta;          // index of the range (blockIdx.x / windows)
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

// The CTA whose range holds unit u, and its segment.
template <class T> __device__ __forceinline__ int64_t ctaOf(const Gn<T>& a, int64_t u) {
    return a.perDivOk ? int64_t(a.perDiv.div(uint32_t(u))) : u / a.per;
}
template <class T> __device__ __forceinline__ int64_t segmentOf(const Gn<T>& a, int64_t u) {
    return a.perDivOk ? int64_t(a.segDiv.div(uint32_t(u))) : u / a.segLen;
}

// Every piece's mean and rstd from the partials of the CTAs that share its segment, in a fixed order:
// kTP threads of one warp per (piece, group), each summing every kTP-th CTA, then a shuffle tree.
constexpr int kTP = 16;
template <bool CL, class T> __device__ __forceinline__ void gatherStats(const Gn<T>& a, const Cta<T>& t, bool fused) {
    const int32_t width = CL ? a.groups : 1, targets = t.pieces * width;
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
        if (k < targets && sub == 0) {
            const float d = s1 * a.invCount;
            float var = s2 * a.invCount - d * d;
            var = var < 0.f ? 0.f : var; // keeps NaN
            t.mean[k] = (fused ? t.shift[k] : shift) + d;
            t.rstd[k] = rsqrtf(var + a.eps);
        }
    }
    __syncthreads();
}

// ---- channels-first -------------------------------------------------------------------------------

// A group's piece: elements [e0, e1) of segment (group) s.
struct Piece {
    int64_t s, e0, e1;
};

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
        if (!sharedFirst && global.e0 < global.e1) cfWalk<S, 4, T, VEC>(a, a.x, a.skip, 0, global, f);
    if (shared.e0 < shared.e1) cfWalk<Src::kShared, 2, T, VEC>(a, t.sx, t.sk, t.rs, shared, f);
    if constexpr (STREAM)
        if (sharedFirst && global.e0 < global.e1) cfWalk<S, 4, T, VEC>(a, a.x, a.skip, 0, global, f);
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
        if (threadIdx.x == 0) a.slots[t.cta + t.first + p] = r;
    }
}

template <bool STREAM, class T, int VEC> __device__ void cfNorm(const Gn<T>& a, const Cta<T>& t) {
    for (int32_t p = t.pieces - 1; p >= 0; --p) {
        const float mean = t.mean[p], rstd = t.rstd[p];
        cfEach<Src::kLast, STREAM, T, VEC>(a, t, {t.first + p, t.begin(a, p), t.end(a, p)}, true,
                                           [&](const float (&v)[VEC], int32_t c, int64_t o) {
            const float sc = rstd * __ldg(a.gamma + c), sh = a.beta ? __ldg(a.beta + c) : 0.f;
            if (a.sum) storeFloats<T, VEC>(a.sum + o, v);
            float w[VEC];
#pragma unroll
            for (int e = 0; e < VEC; ++e) {
                w[e] = fmaf(v[e] - mean, sc, sh);
                if (a.act == GroupNormAct::kSilu) w[e] = silu(w[e]);
            }
            storeFloats<T, VEC>(a.y + o, w);
        });
    }
}

// ---- channels-last --------------------------------------------------------------------------------

// This thread's channels: pack `c / VEC` of every `rows`-th pixel from `r`; idle threads (r >= rows) hold none.
template <int VEC> struct Lane {
    int32_t r, c;   // pixel row, first channel
    bool active;
    int32_t real;   // channels c .. c + real - 1 are not the pad
    template <class T> __device__ __forceinline__ explicit Lane(const Gn<T>& a) {
        r = int32_t(a.packsDiv.div(threadIdx.x));
        c = (int32_t(threadIdx.x) - r * a.packs) * VEC;
        active = r < a.rows;
        real = min(max(a.channels - c, 0), VEC);
    }
    __device__ __forceinline__ bool ok(int e) const { return e < real; }
    __device__ __forceinline__ bool whole() const { return real == VEC; } // no pad in the pack
    // Channel c + e, or the last channel for the pad (its values are then not used): always a valid index.
    template <class T> __device__ __forceinline__ int32_t channel(const Gn<T>& a, int e) const {
        return c + e < a.channels ? c + e : a.channels - 1;
    }
    // The group of channel(a, e).
    template <class T> __device__ __forceinline__ int32_t group(const Gn<T>& a, int e) const {
        return int32_t(a.cpgDiv.div(uint32_t(channel(a, e))));
    }
    // out[e] = vals[the group of channel(a, e)] (vals: one piece's per-group values): two loads where a
    // pack meets at most two groups (groups of VEC channels or more: a branch the same in every
    // thread), else one per channel (and in the narrow kernels, which would spill at 64 registers).
    template <class T> __device__ __forceinline__ void groupValues(const Gn<T>& a, const float* vals, float (&out)[VEC]) const {
        if (!kNarrow<T, VEC, GroupNormLayout::kChannelsLast> && a.cpg >= VEC) {
            const int32_t g0 = group(a, 0), cut = (g0 + 1) * a.cpg;
            const float v0 = vals[g0], v1 = vals[g0 + 1 < a.groups ? g0 + 1 : g0];
#pragma unroll
            for (int e = 0; e < VEC; ++e) out[e] = c + e < cut ? v0 : v1;
        } else {
#pragma unroll
            for (int e = 0; e < VEC; ++e) out[e] = vals[group(a, e)];
        }
    }
};

// Calls f(x + full skip, element offset) for this lane's packs of pixels [p0, p1) (flat pixel indices),
// from src as cfWalk; the callers add the per-channel part of s.
template <Src S, int U, class T, int VEC, class F>
__device__ __forceinline__ void clWalk(const Gn<T>& a, const Lane<VEC>& l, const T* xs, const T* ks, int64_t base, int64_t p0,
                                       int64_t p1, F&& f) {
    if (!l.active) return;
    const int64_t step = a.rows;
    for (int64_t q0 = p0 + l.r; q0 < p1; q0 += step * U) {
        Pack<T, VEC> px[U], pk[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t q = q0 + u * step;
            if (q < p1) {
                const int64_t o = (q - base) * (S == Src::kShared ? a.lstride : a.cstride) + l.c;
                px[u] = fetch<S, T, VEC>(xs + o);
                if (a.skipMode == GroupNormSkip::kFull) pk[u] = fetch<S, T, VEC>(ks + o);
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t q = q0 + u * step;
            if (q >= p1) continue;
            float v[VEC];
            packValues(a, px[u], pk[u], v);
            f(v, q * a.cstride + l.c);
        }
    }
}

template <Src S, bool STREAM, class T, int VEC, class F>
__device__ __forceinline__ void clEach(const Gn<T>& a, const Cta<T>& t, const Lane<VEC>& l, int64_t p0, int64_t p1,
                                       bool sharedFirst, F&& f) {
    const int64_t g1 = p1 < t.rs ? p1 : t.rs, s0 = p0 > t.rs ? p0 : t.rs;
    if constexpr (STREAM)
        if (!sharedFirst && p0 < g1) clWalk<S, 2, T, VEC>(a, l, a.x, a.skip, 0, p0, g1, f);
    if (s0 < p1) clWalk<Src::kShared, 2, T, VEC>(a, l, t.sx, t.sk, t.rs, s0, p1, f);
    if constexpr (STREAM)
        if (sharedFirst && p0 < g1) clWalk<S, 2, T, VEC>(a, l, a.x, a.skip, 0, p0, g1, f);
}

template <class T, int VEC> __device__ __forceinline__ void clAdd(const Gn<T>& a, const Lane<VEC>& l, int64_t n, float (&add)[VEC]) {
#pragma unroll
    for (int e = 0; e < VEC; ++e) add[e] = 0.f;
    if (!a.bias && a.skipMode != GroupNormSkip::kPerChannel) return; // one branch, not one per channel
#pragma unroll
    for (int e = 0; e < VEC; ++e)
        if (l.ok(e)) add[e] = channelAdd<true>(a, n, l.c + e);
}

// Sums red[rr * lstride + c] over the rows and the channels of each group g of sample n into its partial
// (slot of range cta): a.split threads per channel, each over every split-th row (a window's few channels
// have many rows), their sums left in rows 0..split-1, then a warp per group over its channels and those.
template <class T> __device__ __forceinline__ void clGroupSums(const Gn<T>& a, float2* red, int64_t n, int32_t cta) {
    for (int32_t i = threadIdx.x; i < a.channels * a.split; i += kThreads) {
        const int32_t j = int32_t(a.channelsDiv.div(uint32_t(i))), c = i - j * a.channels;
        float2 v = make_float2(0.f, 0.f);
#pragma unroll 2
        for (int32_t rr = j; rr < a.rows; rr += a.split) {
            const float2 r = red[rr * a.lstride + c];
            v.x += r.x, v.y += r.y;
        }
        red[j * a.lstride + c] = v; // only this thread reads row j of column c
    }
    __syncthreads();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = kThreads / 32;
    for (int32_t g = warp; g < a.groups; g += nw) {
        float v1 = 0.f, v2 = 0.f;
        for (int32_t k = lane; k < a.cpg * a.split; k += 32) {
            const int32_t j = int32_t(a.cpgDiv.div(uint32_t(k)));
            const float2 r = red[j * a.lstride + g * a.cpg + (k - j * a.cpg)];
            v1 += r.x, v2 += r.y;
        }
        v1 = warpSum(v1), v2 = warpSum(v2);
        if (lane == 0) a.slots[g * a.slotStride + cta + n] = make_float2(v1, v2);
    }
}

template <bool STREAM, class T, int VEC> __device__ void clStats(const Gn<T>& a, const Cta<T>& t) {
    const Lane<VEC> l(a);
    for (int32_t p = 0; p < t.pieces; ++p) {
        const int64_t n = t.first + p;
        float add[VEC], k[VEC], s1[VEC], s2[VEC];
        clAdd(a, l, n, add);
        l.groupValues(a, t.shift + p * a.groups, k);
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
            k[e] = l.ok(e) ? k[e] : 0.f;
            s1[e] = s2[e] = 0.f;
        }
        // The pad's sums (garbage) are never read: clGroupSums adds real channels only.
        clEach<Src::kKeep, STREAM, T, VEC>(a, t, l, t.begin(a, p), t.end(a, p), false, [&](const float (&v)[VEC], int64_t) {
#pragma unroll
            for (int e = 0; e < VEC; ++e) {
                const float d = (v[e] + add[e]) - k[e];
                s1[e] += d;
                s2[e] = fmaf(d, d, s2[e]);
            }
        });
        // Per channel over the rows, then per group over its channels, through t.red (16-byte stores where
        // the pack has pairs of channels: half the shared-memory wavefronts of 8-byte ones).
        if (l.active) {
            float2* r = t.red + l.r * a.lstride + l.c;
            if constexpr (VEC % 2 == 0) {
#pragma unroll
                for (int e = 0; e < VEC; e += 2) reinterpret_cast<float4*>(r)[e / 2] = make_float4(s1[e], s2[e], s1[e + 1], s2[e + 1]);
            } else {
#pragma unroll
                for (int e = 0; e < VEC; ++e) r[e] = make_float2(s1[e], s2[e]);
            }
        }
        __syncthreads();
        clGroupSums(a, t.red, n, t.cta);
        if (p + 1 < t.pieces) __syncthreads(); // t.red is written again
    }
}

template <bool STREAM, class T, int VEC> __device__ void clNorm(const Gn<T>& a, const Cta<T>& t) {
    const Lane<VEC> l(a);
    for (int32_t p = t.pieces - 1; p >= 0; --p) {
        float add[VEC], m[VEC], sc[VEC], sh[VEC];
        clAdd(a, l, t.first + p, add);
        // The weights: in float4s where aligned and the lane holds no pad (a warp reads them contiguously),
        // else per channel (0 for the pad); then each channel's group's mean and rstd.
        bool loaded = false;
        if constexpr (VEC % 4 == 0) {
            if (a.weights16 && l.whole()) {
#pragma unroll
                for (int e = 0; e < VEC; e += 4) {
                    const float4 g = __ldg(reinterpret_cast<const float4*>(a.gamma + l.c + e));
                    const float4 b = a.beta ? __ldg(reinterpret_cast<const float4*>(a.beta + l.c + e)) : float4{};
                    sc[e] = g.x, sc[e + 1] = g.y, sc[e + 2] = g.z, sc[e + 3] = g.w;
                    sh[e] = b.x, sh[e + 1] = b.y, sh[e + 2] = b.z, sh[e + 3] = b.w;
                }
                loaded = true;
            }
        }
        if (!loaded)
#pragma unroll
            for (int e = 0; e < VEC; ++e) {
                sc[e] = l.ok(e) ? __ldg(a.gamma + l.c + e) : 0.f;
                sh[e] = l.ok(e) && a.beta ? __ldg(a.beta + l.c + e) : 0.f;
            }
        float rs[VEC];
        l.groupValues(a, t.mean + p * a.groups, m);
        l.groupValues(a, t.rstd + p * a.groups, rs);
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
            m[e] = l.ok(e) ? m[e] : 0.f;
            sc[e] *= rs[e];
        }
        // The pad is written as zero: per element only in the lane whose pack holds some (padded).
        const auto walk = [&](auto act, auto padded) {
            clEach<Src::kLast, STREAM, T, VEC>(a, t, l, t.begin(a, p), t.end(a, p), true, [&](const float (&v)[VEC], int64_t o) {
                float w[VEC];
#pragma unroll
                for (int e = 0; e < VEC; ++e) {
                    const bool ok = !decltype(padded)::value || l.ok(e);
                    w[e] = ok ? fmaf((v[e] + add[e]) - m[e], sc[e], sh[e]) : 0.f;
                    if constexpr (decltype(act)::value) w[e] = silu(w[e]);
                }
                if (a.sum) {
                    float s[VEC];
#pragma unroll
                    for (int e = 0; e < VEC; ++e) s[e] = !decltype(padded)::value || l.ok(e) ? v[e] + add[e] : 0.f;
                    storeFloats<T, VEC>(a.sum + o, s);
                }
                storeFloats<T, VEC>(a.y + o, w);
            });
        };
        withSilu(a.act, [&](auto act) {
            // (narrow kernels: one walk, the second would spill at 64 registers)
            if (!kNarrow<T, VEC, GroupNormLayout::kChannelsLast> && l.whole()) walk(act, std::false_type{});
            else walk(act, std::true_type{});
        });
    }
}

// ---- the kernel -----------------------------------------------------------------------------------

// Shared memory besides the staged units (floats): channels-last's per-channel sums (two a channel),
// then K, mean and rstd of every piece (and group).
__host__ __device__ __forceinline__ int64_t auxFloats(bool cl, int64_t rows, int64_t lstride, int64_t pieces, int64_t width) {
    return (cl ? 2 * rows * lstride : 0) + 3 * pieces * width;
}

// Window w of a channels-last windowed plan as a tensor of its own: every per-channel pointer moved to
// its first channel, its partials and shifts to their own part of the workspace.
template <class T> __device__ __forceinline__ void toWindow(Gn<T>& a, int32_t w) {
    const int64_t c0 = int64_t(w) * a.channels, segments = a.units / a.segLen;
    a.x += c0, a.y += c0, a.gamma += c0;
    if (a.skip) a.skip += c0;
    if (a.sum) a.sum += c0;
    if (a.bias) a.bias += c0;
    if (a.beta) a.beta += c0;
    a.slots += int64_t(w) * a.groups * a.slotStride;
    a.shifts += int64_t(w) * a.groups * segments;
}

// STREAM false: a fused plan with every unit of each CTA's range staged (less code to fetch).
template <class T, int VEC, GroupNormLayout L, bool STREAM = true>
__global__ void __launch_bounds__(kThreads, kNarrow<T, VEC, L> || (L == GroupNormLayout::kChannelsFirst && !STREAM) ? 2 : 1)
residentKernel(Gn<T> a) {
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ float red2[2][32];
    constexpr bool kCl = L == GroupNormLayout::kChannelsLast;
    const int64_t ue = kCl ? a.lstride : 1; // staged elements per unit
    const int32_t width = kCl ? a.groups : 1;
    Cta<T> t;
    t.cta = int32_t(blockIdx.x);
    bool windowed = false; // this CTA sees a window of each pixel's channels (plans of 16-byte packs)
    if constexpr (kCl && VEC * sizeof(T) == 16) windowed = a.windows > 1;
    if (windowed) {
        t.cta = int32_t(a.windowsDiv.div(blockIdx.x));
        toWindow(a, int32_t(blockIdx.x) - t.cta * a.windows);
    }
    t.u0 = int64_t(t.cta) * a.per;
    t.u1 = t.u0 + a.per < a.units ? t.u0 + a.per : a.units;
    t.rs = t.u1 - a.resident > t.u0 ? t.u1 - a.resident : t.u0;
    t.first = segmentOf(a, t.u0);
    t.pieces = int32_t(segmentOf(a, t.u1 - 1) - t.first + 1);
    const int64_t slot = (a.resident * ue + 7) / 8 * 8; // staged elements per copy, 16-byte aligned
    T* sx = reinterpret_cast<T*>(smem);
    T* sk = sx + slot;
    t.sx = sx, t.sk = sk, t.red2 = red2;
    t.red = reinterpret_cast<float2*>(a.skipMode == GroupNormSkip::kFull ? sk + slot : sk);
    t.shift = reinterpret_cast<float*>(t.red + (kCl ? int64_t(a.rows) * a.lstride : 0));
    t.mean = t.shift + int64_t(a.maxPieces) * width;
    t.rstd = t.mean + int64_t(a.maxPieces) * width;
    if (a.stats) {
        const int32_t staged = int32_t((t.u1 - t.rs) * ue);
        if (staged) { // narrow plans stage in 16-byte packs too (their pixels are whole ones)
            constexpr int kStage = kNarrow<T, VEC, L> ? int(16 / sizeof(T)) : VEC;
            if (windowed) { // the window's channels of each pixel
                stageRows<T, VEC>(sx, a.x + t.rs * a.cstride, staged, a.packs, a.packsDiv, a.cstride);
                if (a.skipMode == GroupNormSkip::kFull) stageRows<T, VEC>(sk, a.skip + t.rs * a.cstride, staged, a.packs, a.packsDiv, a.cstride);
            } else {
                stage<T, kStage>(sx, a.x + t.rs * ue, staged);
                if (a.skipMode == GroupNormSkip::kFull) stage<T, kStage>(sk, a.skip + t.rs * ue, staged);
            }
        }
        loadShifts<kCl>(a, t);
        if (staged) waitStaged(); // and the shifts
        else __syncthreads();
        if constexpr (kCl) clStats<STREAM, T, VEC>(a, t);
        else cfStats<STREAM, T, VEC>(a, t);
    }
    if (a.stats && a.norm) { // every partial written
        if (a.local) __syncthreads();
        else cooperative_groups::this_grid().sync();
    }
    if (a.norm) {
        gatherStats<kCl>(a, t, a.stats);
        if constexpr (kCl) clNorm<STREAM, T, VEC>(a, t);
        else cfNorm<STREAM, T, VEC>(a, t);
    }
}

} // namespace
} // namespace trtp
