#include "bias_activation_op.h"

namespace trtp {
namespace {
constexpr EnumName<Activation> kActivations[] = {
    {"identity", Activation::kIdentity}, {"relu", Activation::kRelu},   {"relu6", Activation::kRelu6},
    {"gelu", Activation::kGelu},         {"gelu_tanh", Activation::kGeluTanh}, {"silu", Activation::kSilu},
    {"quick_gelu", Activation::kQuickGelu}, {"hard_swish", Activation::kHardSwish},
};
} // namespace

BiasActivationOp::BiasActivationOp(Activation act, std::vector<float> bias) : mAct(act), mBias(std::move(bias)) {
    if (!isKnown(act, kActivations)) fail("activation code %d is invalid", static_cast<int>(act));
}

const OpSchema& BiasActivationOp::schema() {
    static const OpSchema s{
        kName,
        "y = act(x + bias); bias optional, broadcast over the last dim.",
        {{"activation", FieldKind::kString, true, std::nullopt, enumValues(kActivations), "the activation"},
         {"bias", FieldKind::kWeights, false, std::nullopt, {}, "length == last dim of x"}},
        {{"x", false, nullptr, "any rank >= 1"}},
        {{"y", false, nullptr, "like x"}},
    };
    return s;
}

BiasActivationOp BiasActivationOp::fromFields(const FieldParser& p) {
    auto act = parseEnum(FieldParser::required(p.string("activation"), "activation"), kActivations, "activation");
    return {act, p.weights("bias").value_or(std::vector<float>{})};
}

void BiasActivationOp::toFields(FieldWriter& w) const {
    w.string("activation", enumName(mAct, kActivations));
    w.weights("bias", mBias);
}

BiasActivationOp BiasActivationOp::read(Reader& r) {
    auto act = static_cast<Activation>(r.pod<int32_t>());
    return {act, r.floats()};
}

void BiasActivationOp::write(Writer& w) const {
    w.pod(static_cast<int32_t>(mAct));
    w.floats(mBias);
}

void BiasActivationOp::checkDims(const nvinfer1::Dims* in, int32_t) const {
    if (in[0].nbDims < 1) fail("input rank %d, expected >= 1", in[0].nbDims);
    const int64_t hidden = in[0].d[in[0].nbDims - 1];
    if (!mBias.empty() && hidden >= 0 && hidden != static_cast<int64_t>(mBias.size()))
        fail("last dim of input %s is %lld, bias has %zu values", dimsString(in[0]).c_str(), static_cast<long long>(hidden), mBias.size());
}

cudaError_t BiasActivationOp::launch(DType dt, const nvinfer1::PluginTensorDesc* in, int32_t, const DeviceWeights& w,
                                     const void* const* inputs, void* const* outputs, cudaStream_t stream) const {
    int64_t rows, hidden;
    rowsAndHidden(in[0].dims, rows, hidden);
    return launchBiasActivation(dt, inputs[0], w.at(0), outputs[0], rows, hidden, mAct, stream);
}

} // namespace trtp
