// SkipNorm's row kernels for one I/O type: the kernel of a variant found from its template flags, and
// its launch. Each type's kernels compile in their own translation unit (rows_<type>.cu), so a build
// spreads them over its cores; skip_norm.cu reaches them through rows.h.
#pragma once
#include <map>
#include <mutex>
#include <tuple>

#include "common.cuh"
#include "rows.h"

#include "kernels.cuh"
#include "variants.cuh"

namespace trtp {
namespace {

using namespace detail;

// Calls f(kernel, threads per block, rows per block) for variant v's kernel.
template <class T, int VEC, Norm NORM, int I, int C, class F>
cudaError_t atCombo(int64_t hidden, F& f) {
    constexpr bool W = C & 2, P = C & 1, S = C & 4, IOW = C & 8, H = C & 16, SH = C & 32;
    constexpr int NV = kNvs[I];
    if constexpr (NV * VEC > kMaxElems || ((IOW || SH) && sizeof(T) != 2) || (IOW && SH) ||
                  !built(encode(true, W, I, P, H), sizeof(T), kBf16<T>, NORM, S, SH ? 4 : kAnyRow & ~4)) {
        return cudaErrorInvalidValue;
    } else {
        const unsigned threads = W ? 32 * kWarpRows : unsigned(blockThreads(hidden / VEC, NV));
        return f(rowKernel<T, VEC, NV, W, NORM, P, S, IOW, H, SH>, threads, W ? kWarpRows : 1);
    }
}

template <class T, int VEC, Norm NORM, int I, class F, int... C>
cudaError_t atNv(int combo, int64_t hidden, F& f, std::integer_sequence<int, C...>) {
    cudaError_t e = cudaErrorInvalidValue;
    ((combo == C ? (e = atCombo<T, VEC, NORM, I, C>(hidden, f), true) : false) || ...);
    return e;
}

template <class T, int VEC, Norm NORM, class F, int... I>
cudaError_t atIndex(int32_t v, bool skip, bool iow, int64_t hidden, F& f, std::integer_sequence<int, I...>) {
    const int combo = (shifted(sizeof(T), hidden) ? 32 : 0) | (isHoist(v) ? 16 : 0) | (iow ? 8 : 0) | (skip ? 4 : 0) |
                      (isWarp(v) ? 2 : 0) | (isPrefetch(v) ? 1 : 0);
    cudaError_t e = cudaErrorInvalidValue;
    ((nvIndex(v) == I ? (e = atNv<T, VEC, NORM, I>(combo, hidden, f, std::make_integer_sequence<int, 64>{}), true)
                      : false) ||
     ...);
    return e;
}

// Calls f(kernel, threads, rows per block) for looped variant v's kernel (combo: its template flags).
template <class T, int VEC, Norm NORM, int C, class F> cudaError_t atLoopCombo(int32_t v, F& f) {
    constexpr bool S = C & 1, IOW = C & 2, W = C & 4, ODD = C & 32, B = C & 64;
    constexpr int PF = (C >> 3) & 3;
    constexpr int32_t flags = encode(true, W, 0, PF & kNextRow, PF & kOwnRow);
    constexpr bool any = [] { // the build has this kernel for some variant of these flags
        for (int i = 0; i < 3; ++i)
            if (built(flags | (kLoop + i), sizeof(T), kBf16<T>, NORM, S, ODD ? kAnyRow & ~kWhole : kWhole)) return true;
        return false;
    }();
    if constexpr (!any || (IOW && (sizeof(T) != 2 || ODD))) {
        return cudaErrorInvalidValue;
    } else {
        const unsigned threads = 128u << (nvIndex(v) - kLoop);
        return f(loopRowKernel<T, VEC, NORM, S, B, IOW, W, PF, ODD>, threads, W ? int(threads / 32) : 1);
    }
}

template <class T, int VEC, Norm NORM, class F, int... C>
cudaError_t withLoopKernel(int32_t v, bool skip, bool bias, bool iow, int64_t hidden, F& f, std::integer_sequence<int, C...>) {
    const int combo = (bias ? 64 : 0) | (hidden % VEC ? 32 : 0) | (isPrefetch(v) ? kNextRow << 3 : 0) | (isHoist(v) ? kOwnRow << 3 : 0) |
                      (isWarp(v) ? 4 : 0) | (iow ? 2 : 0) | (skip ? 1 : 0);
    cudaError_t e = cudaErrorInvalidValue;
    ((combo == C ? (e = atLoopCombo<T, VEC, NORM, C>(v, f), true) : false) || ...);
    return e;
}

// Calls f(kernel, threads, rows per block) for the kernel of a feasible variant v (with a skip input or
// not; iow: weights in T, rows whole aligned packs).
template <class T, Norm NORM, class F>
cudaError_t withKernel(int32_t v, bool skip, bool bias, bool iow, int64_t hidden, F&& f) {
    constexpr int VEC = IoSize<T>::kVec;
    if (isLoop(v)) return withLoopKernel<T, VEC, NORM>(v, skip, bias, iow, hidden, f, std::make_integer_sequence<int, 128>{});
    if (nvIndex(v) == kLong) {
        return isVec(v) ? f(longRowKernel<T, VEC, NORM>, unsigned(kLongThreads), 1)
                        : f(longRowKernel<T, 1, NORM>, unsigned(kLongThreads), 1);
    }
    return atIndex<T, VEC, NORM>(v, skip, iow, hidden, f, std::make_integer_sequence<int, kNumNv>{});
}

// Blocks of `kernel` resident on the current GPU at once (0 if the query fails), asked once per device,
// kernel and block size (a launch without a configured count would otherwise pay the query each time).
template <class K> int32_t residentBlocks(K kernel, unsigned threads) {
    int dev = 0, sms = 0, perSm = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return 0;
    static std::mutex m;
    static std::map<std::tuple<int, const void*, unsigned>, int32_t> known;
    const auto key = std::make_tuple(dev, reinterpret_cast<const void*>(kernel), threads);
    try {
        std::lock_guard<std::mutex> lock(m);
        const auto it = known.find(key);
        if (it != known.end()) return it->second;
    } catch (...) {
    }
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, int(threads), 0) != cudaSuccess)
        return 0;
    try {
        std::lock_guard<std::mutex> lock(m);
        known[key] = sms * perSm;
    } catch (...) {
    }
    return sms * perSm;
}

} // namespace

template <class T> int32_t rowKernelBlocks(Norm norm, int32_t v, bool skip, bool bias, bool iow, int64_t hidden) {
    int32_t blocks = -1;
    const auto f = [&](auto kernel, unsigned threads, int) {
        blocks = residentBlocks(kernel, threads);
        return cudaSuccess;
    };
    if (norm == Norm::kLayer) withKernel<T, Norm::kLayer>(v, skip, bias, iow, hidden, f);
    else withKernel<T, Norm::kRms>(v, skip, bias, iow, hidden, f);
    return blocks;
}

template <class T> cudaError_t launchRowKernel(const SkipNormArgs& args, int32_t v, bool iow, cudaStream_t stream) {
    const Row<T> a{static_cast<const T*>(args.x), static_cast<const T*>(args.skip), args.bias, args.gamma,
                   args.beta, static_cast<T*>(args.y), static_cast<T*>(args.sum), args.rows, args.hidden,
                   args.skipRows, args.epsilon, static_cast<const T*>(args.gammaIo), static_cast<const T*>(args.betaIo)};
    auto go = [&](auto kernel, unsigned threads, int perBlock) {
        int64_t grid = ceilDiv(a.rows, perBlock);
        if (isPrefetch(v)) {
            const int32_t resident = args.maxBlocks ? args.maxBlocks : residentBlocks(kernel, threads);
            if (resident > 0 && resident < grid) grid = resident;
        }
        return launchKernel(kernel, gridFor(grid), threads, stream, a);
    };
    const bool skip = args.skip != nullptr, bias = args.bias != nullptr;
    return args.norm == Norm::kLayer ? withKernel<T, Norm::kLayer>(v, skip, bias, iow, args.hidden, go)
                                     : withKernel<T, Norm::kRms>(v, skip, bias, iow, args.hidden, go);
}

} // namespace trtp
