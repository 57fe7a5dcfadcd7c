// GroupNorm's resident kernel itself, both layouts (resident.cuh describes the design; resident.cu plans
// and launches it).
#pragma once
#include "resident_cl.cuh"

namespace trtp {
namespace {

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

// The barrier between a fused launch's phases: the CTA's own (whole segments), its cluster's or the grid's.
template <class T> __device__ __forceinline__ void phaseBarrier(const Gn<T>& a) {
    if (a.local) __syncthreads();
    else if (a.cluster) clusterBarrier();
    else cooperative_groups::this_grid().sync();
}

// STREAM false: a fused plan with every unit of each CTA's range staged (less code to fetch). LEAN (with STREAM
// false): such a plan with no skip, bias or sum, the code for those compiled out (a small launch waits on
// fetching its code).
template <class T, int VEC, GroupNormLayout L, bool STREAM = true, bool LEAN = false>
__global__ void __launch_bounds__(kThreads, kNarrow<T, VEC, L> || (L == GroupNormLayout::kChannelsFirst && !STREAM) ? 2 : 1)
residentKernel(Gn<T> a) {
    if constexpr (LEAN) {
        a.skip = nullptr, a.skipMode = GroupNormSkip::kNone, a.bias = nullptr, a.sum = nullptr;
        a.stats = a.norm = true;
    }
    extern __shared__ __align__(16) unsigned char smem[];
    __shared__ float red2[2][32];
    constexpr bool kCl = L == GroupNormLayout::kChannelsLast;
    const int64_t ue = kCl ? a.lstride : 1; // staged elements per unit
    const int32_t width = kCl ? a.groups : 1;
    Cta<T> t;
    t.cta = int32_t(blockIdx.x);
    bool windowed = false; // this CTA sees a window of each pixel's channels (plans of 16-byte packs)
    if constexpr (kCl && VEC * sizeof(T) == 16) windowed = a.windows > 1;
    if (windowed) { // CTA b: range b / windows, window b % windows; in clusters, window q % windows of sample
        const int32_t b = int32_t(blockIdx.x); // q / windows, whose ranges are consecutive CTAs (q = b / cluster)
        int32_t w;
        if (a.cluster) {
            const int32_t q = b / a.cluster, n = q / a.windows;
            w = q - n * a.windows;
            t.cta = n * a.cluster + (b - q * a.cluster);
        } else {
            t.cta = int32_t(a.windowsDiv.div(blockIdx.x));
            w = b - t.cta * a.windows;
        }
        toWindow(a, w);
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
        prefetchWeights<kCl>(a, t);
        loadShifts<kCl>(a, t);
        if (staged) waitStaged(); // and the shifts
        else __syncthreads();
        if constexpr (kCl) clStats<STREAM, T, VEC>(a, t);
        else cfStats<STREAM, T, VEC>(a, t);
    }
    if (a.stats && a.norm) phaseBarrier(a); // every partial written
    if (a.norm) {
        gatherStats<kCl>(a, t, a.stats);
        if constexpr (kCl) clNorm<STREAM, T, VEC>(a, t);
        else cfNorm<STREAM, T, VEC>(a, t);
    }
}

} // namespace
} // namespace trtp
