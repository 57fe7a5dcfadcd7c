#include "skip_norm_op.h"

#include <cmath>
#include <cstring>

namespace trtp {
namespace {
constexpr EnumName<Norm> kNorms[] = {{"layer", Norm::kLayer}, {"rms", Norm::kRms}};

// The FP16 bits of v when v is exactly an FP16 value (finite).
bool exactHalf(float v, uint16_t& h) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    const uint16_t sign = uint16_t((b >> 16) & 0x8000u);
    const float a = std::fabs(v);
    if (!(a <= 65504.f)) return false;
    if (a < 6.103515625e-05f) { // zero or subnormal: a multiple of 2^-24 below 2^-14
        const float m = a * 16777216.f;
        if (m != std::floor(m)) return false;
        h = uint16_t(sign | uint16_t(m));
        return true;
    }
    if (b & 0x1FFFu) return false; // more than 10 fraction bits
    const int e = int((b >> 23) & 0xFFu) - 127;
    h = uint16_t(sign | uint16_t((e + 15) << 10) | uint16_t((b >> 13) & 0x3FFu));
    return true;
}

// The BF16 bits of v when v is exactly a BF16 value.
bool exactBf16(float v, uint16_t& h) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    h = uint16_t(b >> 16);
    return (b & 0xFFFFu) == 0 && std::isfinite(v);
}

// Which of mIo holds dt's 16-bit copies (-1: FP32, none); launches find them at weights 3 + 2 * slot
// (gamma) and 4 + 2 * slot (beta), after gamma, beta and bias (SkipNormOp::weights).
int ioSlot(DType dt) { return dt == DType::kFloat16 ? 0 : dt == DType::kBFloat16 ? 1 : -1; }

// w as packed 16-bit values (two per float) when every value is exact, else empty.
std::vector<float> packed16(const std::vector<float>& w, bool (*exact)(float, uint16_t&)) {
    std::vector<uint16_t> h(w.size() + w.size() % 2, 0);
    for (size_t i = 0; i < w.size(); ++i)
        if (!exact(w[i], h[i])) return {};
    std::vector<float> out(h.size() / 2);
    if (!h.empty()) std::memcpy(out.data(), h.data(), h.size() * 2);
    return out;
}
} // namespace

SkipNormOp::SkipNormOp(Params p) : OpBase(std::move(p)) {
    mP.check();
    for (int t = 0; t < 2; ++t) {
        auto exact = t == 0 ? exactHalf : exactBf16;
        mIo[t][0] = packed16(mP.gamma, exact);
        mIo[t][1] = mP.beta.empty() ? std::vector<float>{} : packed16(mP.beta, exact);
        if (mIo[t][0].empty() || (!mP.beta.empty() && mIo[t][1].empty())) mIo[t][0].clear(), mIo[t][1].clear();
    }
}

const FieldTable<SkipNormOp::Params>& SkipNormOp::fields() {
    using F = Fields<Params>;
    static const FieldTable<Params> t = FieldTable<Params>{F::choice("norm", &Params::norm, kNorms, {}, "the normalization")} +
                                        NormWeights::fields<Params>(kEpsilon, "length == hidden (last dim)") +
                                        FieldTable<Params>{NormWeights::outputSumField<Params>()};
    return t;
}

const OpSchema& SkipNormOp::schema() {
    static const OpSchema s{
        kName,
        "s = x (+ skip) (+ bias); y = norm(s) * gamma (+ beta); outputs y and, with output_sum, s.",
        fieldSpecs(fields()),
        {{"x", false, nullptr, "any rank >= 1, last dim = hidden"}, {"skip", true, nullptr, "like x, or broadcast over its leading dims"}},
        {{"y", false, nullptr, "like x"}, {"sum", false, "output_sum", "s = x + skip + bias, like x"}},
    };
    return s;
}

void SkipNormOp::checkDims(const Dims* in, int32_t nbInputs) const {
    const auto& x = in[0];
    if (x.nbDims < 1) fail("input rank %d, expected >= 1", x.nbDims);
    const int64_t hidden = x.d[x.nbDims - 1];
    if (hidden >= 0 && hidden != static_cast<int64_t>(mP.gamma.size()))
        fail("last dim of input %s is %lld, gamma has %zu values", dimsString(x).c_str(), static_cast<long long>(hidden), mP.gamma.size());
    if (nbInputs > 1 && skipNormSkipRows(x.d, x.nbDims, in[1].d, in[1].nbDims) < 0)
        fail("skip dims %s neither match input dims %s nor broadcast over its leading dims", dimsString(in[1]).c_str(),
             dimsString(x).c_str());
}

void SkipNormOp::onConfigured(DType dt, int64_t hidden) {
    const int slot = ioSlot(dt);
    const bool io = slot >= 0 && !mIo[slot][0].empty();
    for (int skip = 0; skip < 2; ++skip) {
        const bool sum = mP.outputSum;
        mVariant[skip] = skipNormVariant(dt, mP.norm, skip, sum, hidden, io);
        mSmallVariant[skip] = skipNormVariant(dt, mP.norm, skip, sum, hidden, io, true);
        mMaxBlocks[skip] = skipNormMaxBlocks(dt, mP.norm, skip, mVariant[skip], hidden);
    }
    mVariantType = dt;
    mVariantHidden = hidden;
}

cudaError_t SkipNormOp::launch(DType dt, const TensorDesc* in, int32_t nbInputs, const DeviceWeights& w,
                                   const void* const* inputs, void* const* outputs, cudaStream_t stream) const {
    SkipNormArgs a;
    a.x = inputs[0];
    a.skip = nbInputs > 1 ? inputs[1] : nullptr;
    a.gamma = w.at(0);
    a.beta = w.at(1);
    a.bias = w.at(2);
    a.y = outputs[0];
    a.sum = mP.outputSum ? outputs[1] : nullptr;
    rowsAndHidden(in[0].dims, a.rows, a.hidden);
    if (a.skip) a.skipRows = skipNormSkipRows(in[0].dims.d, in[0].dims.nbDims, in[1].dims.d, in[1].dims.nbDims);
    a.epsilon = mP.epsilon;
    a.norm = mP.norm;
    if (const int slot = ioSlot(dt); slot >= 0) { // exact 16-bit copies of gamma and beta, when there are
        a.gammaIo = w.at(3 + 2 * slot);
        a.betaIo = a.gammaIo ? w.at(4 + 2 * slot) : nullptr;
    }
    // Enqueue never queries the GPU: without a grid measured when configured, a block per row group.
    const int k = a.skip != nullptr;
    const bool configured = dt == mVariantType && a.hidden == mVariantHidden;
    a.variant = configured ? mVariant[k] : -1;
    a.smallVariant = configured ? mSmallVariant[k] : -1;
    a.maxBlocks = configured && mMaxBlocks[k] > 0 ? mMaxBlocks[k] : -1;
    return launchSkipNorm(dt, a, stream);
}

} // namespace trtp
