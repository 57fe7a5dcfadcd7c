// SkipNorm's launch: the public entry points of skip_norm.h; a variant's kernel (variants.cuh, kernels.cuh)
// runs through its I/O type's unit (rows.h), or an AOT kernel (cubins.h). gamma/beta are FP32, or (16-bit I/O, rows of
// whole aligned packs) exact 16-bit copies the plugin keeps when its weights are exact there.
#include "common.cuh"
#include "skip_norm.h"

#include <algorithm>

#include "cubins.h"
#include "rows.h"
#include "variants.cuh"

namespace trtp {
namespace {

using namespace detail;

// The built cubin of this form (triton_aot.py FORMS) and hidden size (small: the one for launches of few
// rows); nullptr if none.
const Cubin* formCubin(DType dt, Norm norm, bool skip, bool sum, int64_t hidden, bool small = false) {
    const bool layer = norm == Norm::kLayer;
    if (sum && !skip) return nullptr;           // the sum output: with a skip input only
    if (skip && !sum && !layer) return nullptr; // a skip input without it: LayerNorm only
    const CubinSkipNormForm form = !skip ? (layer ? kCubinLayerNorm : kCubinRmsNorm)
                                   : !sum ? kCubinSkipLayerNormNoSum
                                          : (layer ? kCubinSkipLayerNorm : kCubinSkipRmsNorm);
    return findCubin(kCubinSkipNorm, form, int32_t(dt), hidden, small);
}

// The AOT cubin for this launch, where its form matches the arguments exactly (see kSkipNormAotVariant):
// a small launch's own cubin where the build has one (else the large launches' one: forced, not picked).
const Cubin* aotCubin(DType dt, const SkipNormArgs& a, bool aligned, bool small) {
    const bool skip = a.skip != nullptr;
    if (!aligned || a.bias || a.rows > INT32_MAX || (skip && a.skipRows && a.skipRows < a.rows)) return nullptr;
    if ((a.norm == Norm::kLayer) != (a.beta != nullptr)) return nullptr;
    const bool sum = a.sum != nullptr;
    const Cubin* few = small ? formCubin(dt, a.norm, skip, sum, a.hidden, true) : nullptr;
    return few ? few : formCubin(dt, a.norm, skip, sum, a.hidden);
}

// Whether c measured faster (triton_picks.json) than the hand-written kernels with these weights
bool picked(const Cubin& c, bool ioWeights) {
    return (c.picked & (ioWeights ? kCubinPickedIoWeights : kCubinPickedFp32Weights)) != 0;
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

} // namespace

int32_t skipNormVariant(DType dt, Norm norm, bool skip, bool sum, int64_t hidden, bool ioWeights, bool small) {
    const Cubin* c = formCubin(dt, norm, skip, sum, hidden, small);
    if (c && picked(*c, ioWeights)) return kSkipNormAotVariant;
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
            int32_t n = 0;
            dispatchDType(dt, [&](auto tag) {
                n = rowKernelBlocks<decltype(tag)>(norm, variant, skip, bias, iow, hidden);
                return cudaSuccess;
            });
            if (n >= 0) blocks = blocks < 0 ? n : std::min(blocks, n);
        }
    return std::max(blocks, 0);
}

int skipNormCandidates(DType dt, Norm norm, bool skip, bool sum, int64_t hidden, int32_t* out, int cap) {
    int n = 0;
    for (int32_t v = 0; v <= kAllBits; ++v)
        if (feasible(v, dt, norm, skip, hidden) && n++ < cap && out) out[n - 1] = v;
    if (formCubin(dt, norm, skip, sum, hidden) && n++ < cap && out)
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
    if (aot || v < 0) {
        const Cubin* c = aotCubin(dt, args, vec, small);
        if (c && (aot || (picked(*c, io) && bool(c->small) == small))) return launchAot(*c, args, stream);
        if (aot) v = -1; // none for this launch: the pick
    }
    if (!feasible(v, dt, args.norm, skip, args.hidden) || (isVec(v) && !vec))
        v = pick(es, dt == DType::kBFloat16, args.norm, skip, args.hidden, vec, io, small);
    const bool iow = io && isVec(v) && nvIndex(v) != kLong;
    return dispatchDType(dt, [&](auto tag) { return launchRowKernel<decltype(tag)>(args, v, iow, stream); });
}

} // namespace trtp
