#include "bias_activation_op.h"

namespace trtp {
namespace {
constexpr EnumName<Activation> kActivations[] = {
    {"identity", Activation::kIdentity}, {"relu", Activation::kRelu},   {"relu6", Activation::kRelu6},
    {"gelu", Activation::kGelu},         {"gelu_tanh", Activation::kGeluTanh}, {"silu", Activation::kSilu},
    {"quick_gelu", Activation::kQuickGelu}, {"hard_swish", Activation::kHardSwish},
};
} // namespace

const FieldTable<BiasActivationOp::Params>& BiasActivationOp::fields() {
    using F = Fields<Params>;
    static const FieldTable<Params> t{
        F::choice("activation", &Params::act, kActivations, {}, "the activation"),
        F::weights("bias", &Params::bias, false, "length == last dim of x"),
    };
    return t;
}

const OpSchema& BiasActivationOp::schema() {
    static const OpSchema s{kName, "y = act(x + bias); bias optional, broadcast over the last dim.", fieldSpecs(fields()),
                            {{"x", false, nullptr, "any rank >= 1"}}, {{"y", false, nullptr, "like x"}}};
    return s;
}

void BiasActivationOp::checkDims(const Dims* in, int32_t) const {
    if (in[0].nbDims < 1) fail("input rank %d, expected >= 1", in[0].nbDims);
    const int64_t hidden = in[0].d[in[0].nbDims - 1];
    if (!mP.bias.empty() && hidden >= 0 && hidden != static_cast<int64_t>(mP.bias.size()))
        fail("last dim of input %s is %lld, bias has %zu values", dimsString(in[0]).c_str(), static_cast<long long>(hidden), mP.bias.size());
}

cudaError_t BiasActivationOp::launch(DType dt, const TensorDesc* in, int32_t, const DeviceWeights& w,
                                     const void* const* inputs, void* const* outputs, cudaStream_t stream) const {
    int64_t rows, hidden;
    rowsAndHidden(in[0].dims, rows, hidden);
    return launchBiasActivation(dt, inputs[0], w.at(0), outputs[0], rows, hidden, mP.act, stream);
}

} // namespace trtp
