// GatedActivation: y = act(gate + gate_bias) * (linear + linear_bias), the operands two inputs or the
// two halves of one input's last dim (SwiGLU, GEGLU, ReGLU). The op declaration (see common/op.h).
#pragma once
#include "../../common/op.h"
#include "gated_activation.h"

namespace trtp {

struct GatedActivationParams {
    Activation act;
    GateOperand gate;
    std::vector<float> gateBias, linearBias;
};

class GatedActivationOp : public OpBase<GatedActivationParams> {
public:
    static constexpr const char* kName = "GatedActivation";
    static const FieldTable<Params>& fields();
    static const OpSchema& schema();
    static constexpr const char* kV1Layout[] = {"activation", "gate", "gate_bias", "linear_bias"}; // blobs of format 1

    explicit GatedActivationOp(Params p);

    HostWeights weights() const { return {&mP.gateBias, &mP.linearBias}; }
    void checkDims(const Dims* in, int32_t nbInputs) const;
    // One input: its last dim halved.
    int64_t lastDimDivisor(int32_t nbInputs) const noexcept { return nbInputs > 1 ? 1 : 2; }
    cudaError_t launch(DType dt, const TensorDesc* in, int32_t nbInputs, const DeviceWeights& w,
                       const void* const* inputs, void* const* outputs, cudaStream_t stream) const;
};

} // namespace trtp
