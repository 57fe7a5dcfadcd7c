// SkipNorm's launch: the kernel of a variant (variants.cuh, kernels.cuh) found at run time from its
// template flags, the public entry points of skip_norm.h. gamma/beta are FP32, or (16-bit I/O, rows of
// whole aligned packs) exact 16-bit copies the plugin keeps when its weights are exact there.
#include "common.cuh"
#include "skip_norm.h"

#include <algorithm>
#include <type_traits>

#include "kernels.cuh"
#include "variants.cuh"
#include "cubins.h"

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

template <class F>
cudaError_t withKernel(DType dt, Norm norm, int32_t v, bool skip, bool bias, bool iow, int64_t hidden, F&& f) {
    return dispatchDType(dt, [&](auto tag) -> cudaError_t {
        using T = decltype(tag);
        return norm == Norm::kLayer ? withKernel<T, Norm::kLayer>(v, skip, bias, iow, hidden, f)
                                    : withKernel<T, Norm::kRms>(v, skip, bias, iow, hidden, f);
    });
}

CubinSkipNormForm aotForm(Norm norm, bool skip) {
    return norm == Norm::kLayer ? (skip ? kCubinSkipLayerNorm : kCubinLayerNorm) : (skip ? kCubinSkipRmsNorm : kCubinRmsNorm);
}

// The AOT cubin for this launch, where its form matches the arguments exactly (see kSkipNormAotVariant).
const Cubin* aotCubin(DType dt, const SkipNormArgs& a, bool aligned) {
    const bool skip = a.skip != nullptr;
    if (!aligned || a.bias || a.rows > INT32_MAX || (skip && a.skipRows && a.skipRows < a.rows)) return nullptr;
    if ((a.norm == Norm::kLayer) != (a.beta != nullptr) || skip != (a.sum != nullptr)) return nullptr;
    return findCubin(kCubinSkipNorm, aotForm(a.norm, skip), int32_t(dt), a.hidden);
}

// Where the AOT kernel measured faster than the hand-written ones (triton_picks.json; measured on large
// launches with FP32 weights: the plugin picks it there only).
bool aotPicked(DType dt, Norm norm, bool skip, int64_t hidden) {
    const Cubin* c = findCubin(kCubinSkipNorm, aotForm(norm, skip), int32_t(dt), hidden);
    return c && c->picked;
}

// Its parameters (triton_aot.py PARAMS): x, skip, bias, gamma, beta, y, s_out, rows, eps.
cudaError_t launchAot(const Cubin& c, const SkipNormArgs& a, cudaStream_t stream) {
    const void* ptrs[7] = {a.x, a.skip, a.bias, a.gamma, a.beta, a.y, a.sum};
    int32_t rows = int32_t(a.rows);
    float eps = a.epsilon;
    void* args[9];
    for (int i = 0; i < 7; ++i) args[i] = &ptrs[i];
    args[7] = &rows, args[8] = &eps;
    return launchCubin(c, unsigned(ceilDiv(a.rows, c.xblock)), args, 9, stream);
}

// Blocks of `kernel` resident on the current GPU at once (0 if the query fails).
template <class K> int32_t residentBlocks(K kernel, unsigned threads) {
    int dev = 0, sms = 0, perSm = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, int(threads), 0) != cudaSuccess)
        return 0;
    return sms * perSm;
}

} // namespace

int32_t skipNormVariant(DType dt, Norm norm, bool skip, int64_t hidden, bool ioWeights, bool small) {
    if (!small && !ioWeights && aotPicked(dt, norm, skip, hidden)) return kSkipNormAotVariant;
    return skipNormCudaVariant(dt, norm, skip, hidden, ioWeights, small);
}

int32_t skipNormCudaVariant(DType dt, Norm norm, bool skip, int64_t hidden, bool ioWeights, bool small) {
    if (hidden < 1) return -1;
    return pick(elemSize(dt), dt == DType::kBFloat16, norm, skip, hidden, true, ioWeights, small);
}

int32_t skipNormMaxBlocks(DType dt, Norm norm, bool skip, int32_t variant, int64_t hidden) {
    if (!feasible(variant, dt, norm, skip, hidden) || !isPrefetch(variant)) return 0;
    int32_t blocks = -1; // with 16-bit weights or not, a bias or not: the fewest (a launch may run any)
    for (bool iow : {false, true})
        for (bool bias : {false, true}) {
            if (iow && dt == DType::kFloat32) continue;
            withKernel(dt, norm, variant, skip, bias, iow, hidden, [&](auto kernel, unsigned threads, int) {
                const int32_t n = residentBlocks(kernel, threads);
                blocks = blocks < 0 ? n : std::min(blocks, n);
                return cudaSuccess;
            });
        }
    return std::max(blocks, 0);
}

int skipNormCandidates(DType dt, Norm norm, bool skip, int64_t hidden, int32_t* out, int cap) {
    int n = 0;
    for (int32_t v = 0; v <= kAllBits; ++v)
        if (feasible(v, dt, norm, skip, hidden) && n++ < cap && out) out[n - 1] = v;
    if (findCubin(kCubinSkipNorm, aotForm(norm, skip), int32_t(dt), hidden) && n++ < cap && out)
        out[n - 1] = kSkipNormAotVariant;
    return n;
}

cudaError_t launchSkipNorm(DType dt, const SkipNormArgs& args, cudaStream_t stream) {
    if (args.rows < 0 || args.hidden < 1 || !(args.epsilon >= 0.f) || args.skipRows < 0) return cudaErrorInvalidValue;
    if (args.norm != Norm::kLayer && args.norm != Norm::kRms) return cudaErrorInvalidValue;
    if (args.rows == 0) return cudaSuccess;
    if (!args.x || !args.y || !args.gamma) return cudaErrorInvalidValue;
    if (args.rows > INT64_MAX / args.hidden) return cudaErrorInvalidValue;
    const int es = elemSize(dt), vw = vecOf(es);
    // Packs need 16-byte aligned pointers; a broadcast skip row starts where x's row does only when
    // rows are whole packs.
    if (args.gammaIo && (!aligned16(args.gammaIo) || (args.beta && (!args.betaIo || !aligned16(args.betaIo)))))
        return cudaErrorInvalidValue;
    const bool vec = aligned16(args.x) && aligned16(args.y) && aligned16(args.gamma) &&
                     (!args.skip || aligned16(args.skip)) && (!args.sum || aligned16(args.sum)) &&
                     (!args.bias || aligned16(args.bias)) && (!args.beta || aligned16(args.beta)) &&
                     (!args.skip || !args.skipRows || args.skipRows >= args.rows || args.hidden % vw == 0);
    const bool skip = args.skip != nullptr;
    // 16-bit weight copies serve rows that are whole aligned packs (every row, when the first is)
    const bool io = args.gammaIo && es == 2 && vec && args.hidden % vw == 0;
    const bool small = skipNormSmall(args.rows, args.hidden);
    int32_t v = small ? args.smallVariant : args.variant;
    // the AOT kernel when configured, or (no variant) where measured faster, and this launch's form has one
    const bool aot = v == kSkipNormAotVariant;
    if (aot || (v < 0 && !small && !args.gammaIo)) {
        const Cubin* c = aotCubin(dt, args, vec);
        if (c && (aot || c->picked)) return launchAot(*c, args, stream);
        if (aot) v = -1; // none for this launch: the pick
    }
    if (!feasible(v, dt, args.norm, skip, args.hidden) || (isVec(v) && !vec))
        v = pick(es, dt == DType::kBFloat16, args.norm, skip, args.hidden, vec, io, small);
    const bool iow = io && isVec(v) && nvIndex(v) != kLong;
    return dispatchDType(dt, [&](auto tag) -> cudaError_t {
        using T = decltype(tag);
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
        const bool bias = args.bias != nullptr;
        return args.norm == Norm::kLayer ? withKernel<T, Norm::kLayer>(v, skip, bias, iow, args.hidden, go)
                                         : withKernel<T, Norm::kRms>(v, skip, bias, iow, args.hidden, go);
    });
}

} // namespace trtp
