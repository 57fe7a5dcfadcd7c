// BiasActivation: y = act(x + bias), the bias Add in front of an activation folded in.
// The op declaration (see common/op.h for what an op provides).
#pragma once
#include "../../common/op.h"
#include "bias_activation.h"

namespace trtp {

struct BiasActivationParams {
    Activation act;
    std::vector<float> bias;
};

class BiasActivationOp : public OpBase<BiasActivationParams> {
public:
    static constexpr const char* kName = "BiasActivation";
    static const FieldTable<Params>& fields();
    static const OpSchema& schema();
    static constexpr const char* kV1Layout[] = {"activation", "bias"}; // blobs of format 1

    using OpBase::OpBase;

    HostWeights weights() const { return {&mP.bias}; }
    void checkDims(const Dims* in, int32_t nbInputs) const;
    cudaError_t launch(DType dt, const TensorDesc* in, int32_t nbInputs, const DeviceWeights& w,
                       const void* const* inputs, void* const* outputs, cudaStream_t stream) const;
};

} // namespace trtp
