// GroupNorm's resident kernel, channels-last: a CTA is rows x packs threads, each thread one pack of
// channels of every `rows`-th pixel; per-channel sums go through shared memory into groups (resident.cuh
// describes the design).
#pragma once
#include "resident.cuh"

namespace trtp {
namespace {

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
        if (!sharedFirst && p0 < g1) clWalk<S, kClStreamPacks, T, VEC>(a, l, a.x, a.skip, 0, p0, g1, f);
    if (s0 < p1) clWalk<Src::kShared, kStagedPacks, T, VEC>(a, l, t.sx, t.sk, t.rs, s0, p1, f);
    if constexpr (STREAM)
        if (sharedFirst && p0 < g1) clWalk<S, kClStreamPacks, T, VEC>(a, l, a.x, a.skip, 0, p0, g1, f);
}

template <class T, int VEC> __device__ __forceinline__ void clAdd(const Gn<T>& a, const Lane<VEC>& l, int64_t n, float (&add)[VEC]) {
#pragma unroll
    for (int e = 0; e < VEC; ++e) add[e] = 0.f;
    if (!a.bias && a.skipMode != GroupNormSkip::kPerChannel) return; // one branch, not one per channel
#pragma unroll
    for (int e = 0; e < VEC; ++e)
        if (l.ok(e)) add[e] = channelAdd<true>(a, n, l.c + e);
}

// Sums t.red[rr * lstride + c] over the rows and the channels of each group g of piece p (sample n) into its
// partial (putPartial): a.split threads per channel, each over every split-th row (a window's few channels
// have many rows), their sums left in rows 0..split-1, then a warp per group over its channels and those.
template <class T> __device__ __forceinline__ void clGroupSums(const Gn<T>& a, const Cta<T>& t, int32_t p) {
    float2* red = t.red;
    const int64_t n = t.first + p;
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
        if (lane == 0) putPartial(a, t, p * a.groups + g, g * a.slotStride + t.cta + n, make_float2(v1, v2));
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
        clGroupSums(a, t, p);
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

} // namespace
} // namespace trtp
