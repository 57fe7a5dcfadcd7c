#include "gated_activation_op.h"

namespace trtp {
namespace {
constexpr EnumName<Activation> kActivations[] = {
    {"silu", Activation::kSilu}, {"gelu", Activation::kGelu}, {"gelu_tanh", Activation::kGeluTanh}, {"relu", Activation::kRelu}};
constexpr EnumName<GateOperand> kGates[] = {{"first", GateOperand::kFirst}, {"second", GateOperand::kSecond}};
} // namespace

GatedActivationOp::GatedActivationOp(Params p) : OpBase(std::move(p)) {
    if (!mP.gateBias.empty() && !mP.linearBias.empty() && mP.gateBias.size() != mP.linearBias.size())
        fail("gate_bias has %zu values, linear_bias has %zu", mP.gateBias.size(), mP.linearBias.size());
}

const FieldTable<GatedActivationOp::Params>& GatedActivationOp::fields() {
    using F = Fields<Params>;
    static const FieldTable<Params> t{
        F::choice("activation", &Params::act, kActivations, {}, "applied to the gate operand"),
        F::choice("gate", &Params::gate, kGates, GateOperand::kFirst,
                  "the operand activated: the first or second half of x's last dim, or x or x2"),
        F::weights("gate_bias", &Params::gateBias, false, "length == width (y's last dim): added to the gate"),
        F::weights("linear_bias", &Params::linearBias, false, "length == width: added to the other operand"),
    };
    return t;
}

const OpSchema& GatedActivationOp::schema() {
    static const OpSchema s{
        kName,
        "y = act(gate + gate_bias) * (linear + linear_bias); the operands x and x2, or the two halves of x's last dim.",
        fieldSpecs(fields()),
        {{"x", false, nullptr, "[..., 2 width]: both operands as the halves of the last dim; [..., width] with x2"},
         {"x2", true, nullptr, "like x: the second operand"}},
        {{"y", false, nullptr, "[..., width]"}},
    };
    return s;
}

void GatedActivationOp::checkDims(const Dims* in, int32_t nbInputs) const {
    const auto& x = in[0];
    if (x.nbDims < 1) fail("input rank %d, expected >= 1", x.nbDims);
    const int64_t last = x.d[x.nbDims - 1];
    if (nbInputs > 1) {
        const auto& x2 = in[1];
        bool same = x2.nbDims == x.nbDims;
        for (int32_t i = 0; same && i < x.nbDims; ++i) same = x.d[i] < 0 || x2.d[i] < 0 || x.d[i] == x2.d[i];
        if (!same) fail("x2 dims %s differ from x dims %s", dimsString(x2).c_str(), dimsString(x).c_str());
    } else if (last > 0 && last % 2) {
        fail("last dim of x %s is odd: the operands are its two halves", dimsString(x).c_str());
    }
    const int64_t width = nbInputs > 1 || last < 0 ? last : last / 2;
    const size_t biases = mP.gateBias.empty() ? mP.linearBias.size() : mP.gateBias.size();
    if (biases && width >= 0 && width != static_cast<int64_t>(biases))
        fail("operand width of x %s is %lld, the biases have %zu values", dimsString(x).c_str(),
             static_cast<long long>(width), biases);
}

cudaError_t GatedActivationOp::launch(DType dt, const TensorDesc* in, int32_t nbInputs,
                                      const DeviceWeights& w, const void* const* inputs, void* const* outputs,
                                      cudaStream_t stream) const {
    GatedActivationArgs a;
    int64_t last;
    rowsAndHidden(in[0].dims, a.rows, last);
    a.x = inputs[0];
    a.x2 = nbInputs > 1 ? inputs[1] : nullptr;
    a.width = nbInputs > 1 ? last : last / 2;
    a.gateBias = w.at(0);
    a.linearBias = w.at(1);
    a.y = outputs[0];
    a.act = mP.act;
    a.gate = mP.gate;
    return launchGatedActivation(dt, a, stream);
}

} // namespace trtp
