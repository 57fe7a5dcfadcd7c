#include "gated_activation_op.h"

namespace trtp {
namespace {
constexpr EnumName<Activation> kActivations[] = {
    {"silu", Activation::kSilu}, {"gelu", Activation::kGelu}, {"gelu_tanh", Activation::kGeluTanh}, {"relu", Activation::kRelu}};
constexpr EnumName<GateOperand> kGates[] = {{"first", GateOperand::kFirst}, {"second", GateOperand::kSecond}};
} // namespace

GatedActivationOp::GatedActivationOp(Activation act, GateOperand gate, std::vector<float> gateBias,
                                     std::vector<float> linearBias)
    : mAct(act), mGate(gate), mGateBias(std::move(gateBias)), mLinearBias(std::move(linearBias)) {
    if (!isKnown(act, kActivations)) fail("activation code %d is invalid", static_cast<int>(act));
    if (!isKnown(gate, kGates)) fail("gate code %d is invalid", static_cast<int>(gate));
    if (!mGateBias.empty() && !mLinearBias.empty() && mGateBias.size() != mLinearBias.size())
        fail("gate_bias has %zu values, linear_bias has %zu", mGateBias.size(), mLinearBias.size());
}

const OpSchema& GatedActivationOp::schema() {
    static const OpSchema s{
        kName,
        "y = act(gate + gate_bias) * (linear + linear_bias); the operands x and x2, or the two halves of x's last dim.",
        {{"activation", FieldKind::kString, true, std::nullopt, enumValues(kActivations), "applied to the gate operand"},
         {"gate", FieldKind::kString, false, std::nullopt, enumValues(kGates),
          "the operand activated: the first or second half of x's last dim, or x or x2 (default first)"},
         {"gate_bias", FieldKind::kWeights, false, std::nullopt, {}, "length == width (y's last dim): added to the gate"},
         {"linear_bias", FieldKind::kWeights, false, std::nullopt, {}, "length == width: added to the other operand"}},
        {{"x", false, nullptr, "[..., 2 width]: both operands as the halves of the last dim; [..., width] with x2"},
         {"x2", true, nullptr, "like x: the second operand"}},
        {{"y", false, nullptr, "[..., width]"}},
    };
    return s;
}

GatedActivationOp GatedActivationOp::fromFields(const FieldParser& p) {
    const auto act = parseEnum(FieldParser::required(p.string("activation"), "activation"), kActivations, "activation");
    const auto gate = p.string("gate");
    return {act, gate ? parseEnum(*gate, kGates, "gate") : GateOperand::kFirst,
            p.weights("gate_bias").value_or(std::vector<float>{}), p.weights("linear_bias").value_or(std::vector<float>{})};
}

void GatedActivationOp::toFields(FieldWriter& w) const {
    w.string("activation", enumName(mAct, kActivations));
    w.string("gate", enumName(mGate, kGates));
    w.weights("gate_bias", mGateBias);
    w.weights("linear_bias", mLinearBias);
}

GatedActivationOp GatedActivationOp::read(Reader& r) {
    const auto act = static_cast<Activation>(r.pod<int32_t>());
    const auto gate = static_cast<GateOperand>(r.pod<int32_t>());
    auto gateBias = r.floats();
    return {act, gate, std::move(gateBias), r.floats()};
}

void GatedActivationOp::write(Writer& w) const {
    w.pod(static_cast<int32_t>(mAct));
    w.pod(static_cast<int32_t>(mGate));
    w.floats(mGateBias);
    w.floats(mLinearBias);
}

void GatedActivationOp::checkDims(const nvinfer1::Dims* in, int32_t nbInputs) const {
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
    const size_t biases = mGateBias.empty() ? mLinearBias.size() : mGateBias.size();
    if (biases && width >= 0 && width != static_cast<int64_t>(biases))
        fail("operand width of x %s is %lld, the biases have %zu values", dimsString(x).c_str(),
             static_cast<long long>(width), biases);
}

nvinfer1::DimsExprs GatedActivationOp::outputDims(const nvinfer1::DimsExprs* in, int32_t nbInputs,
                                                  nvinfer1::IExprBuilder& b) const {
    nvinfer1::DimsExprs y = in[0];
    if (y.nbDims < 1 || y.nbDims > nvinfer1::Dims::MAX_DIMS) fail("input rank %d, expected 1..%d", y.nbDims, nvinfer1::Dims::MAX_DIMS);
    if (nbInputs > 1) return y;
    auto& last = y.d[y.nbDims - 1];
    last = last ? b.operation(nvinfer1::DimensionOperation::kFLOOR_DIV, *last, *b.constant(2)) : nullptr;
    if (!last) fail("no expression for half the last dim");
    return y;
}

cudaError_t GatedActivationOp::launch(DType dt, const nvinfer1::PluginTensorDesc* in, int32_t nbInputs,
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
    a.act = mAct;
    a.gate = mGate;
    return launchGatedActivation(dt, a, stream);
}

} // namespace trtp
