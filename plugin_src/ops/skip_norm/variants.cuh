// SkipNorm's variant table: a variant is a kernel (path, packs per thread, flags) for one row length;
// pick() is the pure function of (dtype, norm, skip input, hidden, weight kind, small launch) that a
// plugin evaluates once when configured, built() which of them this build compiles.
#pragma once
#include "common.cuh"
#include "skip_norm.h"

#include <type_traits>

namespace trtp {
namespace {

using namespace detail;

constexpr int kWarpRows = 4;      // rows per block on the warp path
constexpr int kMaxThreads = 512;  // block-path threads per row
constexpr int kLongThreads = 512;
constexpr int kMaxElems = 32;     // FP32 values per thread held in registers
constexpr int kNvs[] = {1, 2, 3, 4, 6, 8}; // packs per thread, by variant index
constexpr int kNumNv = 6;
constexpr int kLong = 15;         // variant index of the long-row path
constexpr int kLoop = 6;          // variant indices kLoop + i (i < 3): the looped path, 128 << i threads

// variant = index into kNvs (or kLoop + i, kLong) | flags
// (kHoistBit: gamma/beta loaded with the row, before its reductions: a shorter chain per row, more registers)
enum : int32_t { kWarpBit = 16, kHoistBit = 32, kVecBit = 64, kPrefetchBit = 128, kAllBits = 255 };
constexpr int32_t encode(bool vec, bool warp, int nv, bool prefetch = false, bool hoist = false) {
    return nv | (warp ? kWarpBit : 0) | (vec ? kVecBit : 0) | (prefetch ? kPrefetchBit : 0) | (hoist ? kHoistBit : 0);
}
constexpr bool isHoist(int32_t v) { return v & kHoistBit; }
constexpr bool isVec(int32_t v) { return v & kVecBit; }
constexpr bool isWarp(int32_t v) { return v & kWarpBit; }
constexpr bool isPrefetch(int32_t v) { return v & kPrefetchBit; }
constexpr int nvIndex(int32_t v) { return v & 15; }
constexpr bool isLoop(int32_t v) { return nvIndex(v) >= kLoop && nvIndex(v) < kLoop + 3; }
// Looped variants: kHoistBit prefetches each row into L2 before its first read (kOwnRow), kPrefetchBit
// runs a resident grid that prefetches its next rows (kNextRow), kWarpBit a row per warp (128 threads).

constexpr int vecOf(int es) { return 16 / es; }
constexpr int elemSize(DType dt) { return dt == DType::kFloat32 ? 4 : 2; }

// Threads per row of a block-path variant (a multiple of 32).
constexpr int64_t blockThreads(int64_t packs, int nv) { return ceilDiv(ceilDiv(packs > 0 ? packs : 1, nv), 32) * 32; }

// The first variant index whose packs per thread are >= nv.
constexpr int nvAtLeast(int64_t nv) {
    int i = 0;
    while (i + 1 < kNumNv && kNvs[i] < nv) ++i;
    return i;
}

// Whether variant v's shape (not whether it is built) can run rows of `hidden` elements of es bytes.
constexpr bool fits(int32_t v, int es, int64_t hidden) {
    if (v < 0 || (v & ~kAllBits)) return false;
    const int idx = nvIndex(v), vw = isVec(v) ? vecOf(es) : 1;
    if (isLoop(v)) return isVec(v) && (!isWarp(v) || idx == kLoop);
    if (idx == kLong) return !isWarp(v) && !isPrefetch(v) && !isHoist(v) && hidden % vw == 0;
    if (!isVec(v) || idx >= kNumNv || kNvs[idx] * vw > kMaxElems) return false;
    const int64_t packs = hidden / vw; // whole packs in any row, whatever its alignment
    return isWarp(v) ? packs <= 32 * kNvs[idx] : blockThreads(packs, kNvs[idx]) <= kMaxThreads;
}

// The looped path for rows of `packs` 16-byte packs: about 4 packs per thread (128 threads up to
// `to128` packs, 256 up to `to256`, then 512); each row prefetched into L2 before its first read
// (kOwnRow; RESULTS.md, History: v12).
constexpr int32_t loopVariant(int64_t packs, int64_t to128 = 640, int64_t to256 = 1024) {
    return encode(true, false, kLoop + (packs <= to128 ? 0 : packs <= to256 ? 1 : 2), false, true);
}

// The variant for rows of `hidden` elements of es bytes (vec: 16-byte packs possible; io: gamma/beta
// in the 16-bit I/O dtype, rows whole packs), from the H200 sweeps of every variant (bench_kernels.py
// --sweep; RESULTS.md, History): short rows a warp each; then a block with 2-4 packs per thread
// (16-bit; fewer threads per row, more work each, amortize the reductions), 3-8 (FP32). 16-bit rows
// take the looped path from 2048 elements (LayerNorm, RMSNorm; RMSNorm with FP32 weights from 3072),
// with a skip: LayerNorm from 2048 (BF16 or FP32 weights; FP16 rows of whole packs past 8192) or 4096
// (rows not whole packs), RMSNorm past 8192 up to 12288 (16-bit weights) or rows not whole packs past
// 8192; FP32 rows keep the register rows, which it did not beat. Prefetching won for RMSNorm (16-bit) and
// FP32 rows past 8192 without a skip. A variant that cannot run gives way to the long path.
// 16-bit rows of whole packs with 16-bit weights (the sweep in benchmarks/sweep_norms.json).
constexpr int32_t pickIo(bool bf16, bool layer, bool skip, int64_t hidden) {
    const int64_t packs = hidden / 8;
    if (packs <= 96) {
        const int nv = nvAtLeast(ceilDiv(packs, 32));
        return packs > 64 && !layer && !skip ? encode(true, false, nvAtLeast(3)) : encode(true, true, nv, packs <= 64 && !skip);
    }
    if (skip ? (hidden > 8192 || (layer && bf16 && hidden >= 2048)) && (layer || hidden <= 12288) : hidden >= 2048)
        return loopVariant(packs, skip ? 384 : 640);
    return encode(true, false, nvAtLeast(skip && (hidden > 12288 || bf16) ? 4 : 2));
}

// small: launches of <= kSkipNormSmallElems elements, where a row's chain of latencies is the time: a block
// per row, the fewest packs per thread (one up to 512 packs), gamma/beta loaded with the row.
constexpr int32_t pick(int es, bool bf16, Norm norm, bool skip, int64_t hidden, bool vec, bool io = false,
                       bool small = false) {
    const bool layer = norm == Norm::kLayer;
    const int32_t fallback = encode(vec && hidden % vecOf(es) == 0, false, kLong);
    if (!vec) return fallback;
    const int64_t packs = hidden / vecOf(es);
    int32_t v = fallback;
    if (small) {
        v = encode(true, false, nvAtLeast(ceilDiv(packs, kMaxThreads)), false, true);
    } else if (io && es == 2 && hidden % 8 == 0) {
        v = pickIo(bf16, layer, skip, hidden);
    } else if (packs <= 96 && (es == 2 || packs <= 128)) {
        v = encode(true, true, nvAtLeast(ceilDiv(packs, 32)), es == 2 && !skip);
    } else if (es == 2) {
        const bool odd = hidden % 8 != 0;
        if (skip ? (layer ? hidden >= (odd ? 4096 : 2048) : odd && hidden > 8192) : hidden >= (layer ? 2048 : 3072))
            v = odd ? (skip && !layer ? loopVariant(packs, 384) : loopVariant(packs, 640, 1536))
                    : loopVariant(packs, skip ? 384 : 640);
        else if (hidden > 8192) v = odd ? encode(true, false, nvAtLeast(4)) : fallback;
        else if (skip) v = encode(true, false, nvAtLeast(4));
        else if (layer) v = encode(true, false, nvAtLeast(hidden >= 3072 && !bf16 ? 3 : 2));
        else v = encode(true, false, nvAtLeast(hidden > 3072 && hidden <= 6144 ? 4 : 2), true);
    } else {
        const int nv = hidden <= 768 ? 3 : hidden <= 8192 ? 4 : hidden <= 12288 ? 6 : 8;
        v = encode(true, false, nvAtLeast(nv), (skip ? layer && hidden > 3072 && hidden <= 8192 : hidden > 8192));
    }
    return fits(v, es, hidden) ? v : fallback;
}

#ifndef TRTPLUGINS_SWEEP
#define TRTPLUGINS_SWEEP 0
#endif
// Row lengths at which pick() changes its answer (either side of each boundary; test_skip_norm_variant.py
// checks that every row length's pick is built).
constexpr int64_t kEdges[] = {1,    128,  129,   256,   257,   384,   384 + 8, 512,   512 + 8, 768,   768 + 8, 2048,
                              2056, 3071, 3072,  3073,  3080,  4096,    4104,  5120,  5128,  6144,    6145,  6152,  8192,    8193,
                              8200, 12288, 12289, 12296, 16384, 16385, 16392, 1 << 20};

// Whether rows of `hidden` elements of es bytes take the SHIFT kernels.
constexpr bool shifted(int es, int64_t hidden) { return es == 2 && hidden % 4 != 0; }

// Rows of whole packs (0), of 16-bit rows starting 8 bytes apart (1), SHIFT rows (2); kernels serve a
// mask of these classes.
constexpr int rowClass(int es, int64_t hidden) { return hidden % vecOf(es) == 0 ? 0 : shifted(es, hidden) ? 2 : 1; }
constexpr unsigned kWhole = 1, kAnyRow = 7;

// Whether this build has the kernel of variant v for (es, bf16, norm, skip) and rows of the classes in
// `rows`: one pick() can return (beside each edge, rows of every class occur), or with TRTPLUGINS_SWEEP
// every one (for bench_kernels.py --sweep). Long-row kernels always.
constexpr bool built(int32_t v, int es, bool bf16, Norm norm, bool skip, unsigned rows) {
    if (TRTPLUGINS_SWEEP || nvIndex(v) == kLong) return true;
    for (int64_t edge : kEdges)
        for (int64_t h : {edge - 1, edge, edge + 1, edge + 4}) // edge + 4: rows of half packs (16-bit)
            for (int k = 0; k < 4 && h > 0 && (rows >> rowClass(es, h) & 1); ++k)
                if (pick(es, bf16, norm, skip, h, true, k & 1, k & 2) == v) return true;
    return false;
}

template <class T> constexpr bool kBf16 = sizeof(T) == 2 && !std::is_same_v<T, __half>;

bool feasible(int32_t v, DType dt, Norm norm, bool skip, int64_t hidden) {
    const int es = elemSize(dt);
    return fits(v, es, hidden) && built(v, es, dt == DType::kBFloat16, norm, skip, 1u << rowClass(es, hidden));
}

} // namespace
} // namespace trtp
