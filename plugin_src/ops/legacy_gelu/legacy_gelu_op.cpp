#include "legacy_gelu_op.h"

namespace trtp {
namespace {
// The hidden dim: the last one that is not a trailing 1 (-1 when unknown), or the last dim.
int32_t hiddenAxis(const Dims& d) {
    int32_t k = d.nbDims - 1;
    while (k > 0 && d.d[k] == 1) --k;
    return k;
}
} // namespace

LegacyGeluOp::LegacyGeluOp(Params p) : OpBase(std::move(p)) {
    if (mP.typeId != 0 && mP.typeId != 1) fail("type_id must be 0 (FP32) or 1 (FP16), got %d", mP.typeId);
}

const FieldTable<LegacyGeluOp::Params>& LegacyGeluOp::fields() {
    using F = Fields<Params>;
    static const FieldTable<Params> t{
        F::integer("type_id", &Params::typeId, {}, {}, {}, "0 (FP32) or 1 (FP16); the I/O type is the tensors'"),
        F::weights("bias", &Params::bias, false, "length == the hidden dim"),
    };
    return t;
}

const OpSchema& LegacyGeluOp::schema() {
    static const OpSchema s{
        kName,
        "TensorRT OSS's removed GELU plugin: y = gelu_tanh(x + bias) over the hidden dim (the last that is not a "
        "trailing 1).",
        fieldSpecs(fields()),
        {{"input", false, nullptr, "any rank >= 1, e.g. [S, B, E, 1, 1]"}},
        {{"output", false, nullptr, "like input"}},
    };
    return s;
}

void LegacyGeluOp::checkDims(const Dims* in, int32_t) const {
    const auto& x = in[0];
    if (x.nbDims < 1) fail("input rank %d, expected >= 1", x.nbDims);
    const int64_t hidden = x.d[hiddenAxis(x)];
    if (!mP.bias.empty() && hidden >= 0 && hidden != static_cast<int64_t>(mP.bias.size()))
        fail("hidden dim of input %s (the last that is not a trailing 1) is %lld, bias has %zu values",
             dimsString(x).c_str(), static_cast<long long>(hidden), mP.bias.size());
}

cudaError_t LegacyGeluOp::launch(DType dt, const TensorDesc* in, int32_t, const DeviceWeights& w,
                                 const void* const* inputs, void* const* outputs, cudaStream_t stream) const {
    int64_t rows, last;
    rowsAndHidden(in[0].dims, rows, last);
    const int64_t total = rows * last, hidden = in[0].dims.d[hiddenAxis(in[0].dims)];
    // trailing 1s move no data: [S, B, E, 1, 1] is [S * B, E] rows
    return launchBiasActivation(dt, inputs[0], w.at(0), outputs[0], hidden ? total / hidden : 0, hidden,
                                Activation::kGeluTanh, stream);
}

} // namespace trtp
