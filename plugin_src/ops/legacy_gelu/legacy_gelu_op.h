// CustomGeluPluginDynamic: the GELU plugin TensorRT 11.0 removed (TensorRT OSS geluPlugin), under its
// name, version "1" and public fields, so models and engines that name it build on TensorRT 11
// unchanged. Its documented semantics: y = gelu_tanh(x + bias), bias optional, over the input's
// hidden dim (the last dim that is not a trailing 1: [S, B, E, 1, 1] in the BERT samples). The
// BiasActivation kernel computes it. The op declaration (see common/op.h).
#pragma once
#include "../../common/op.h"
#include "../bias_activation/bias_activation.h"

namespace trtp {

struct LegacyGeluParams {
    int32_t typeId; // 0 FP32, 1 FP16: kept for the fields' sake; the I/O type is the tensors'
    std::vector<float> bias;
};

class LegacyGeluOp : public OpBase<LegacyGeluParams> {
public:
    static constexpr const char* kName = "CustomGeluPluginDynamic";
    static const FieldTable<Params>& fields();
    static const OpSchema& schema();
    static constexpr const char* kV1Layout[] = {"type_id", "bias"}; // blobs of format 1

    explicit LegacyGeluOp(Params p);

    HostWeights weights() const { return {&mP.bias}; }
    void checkDims(const Dims* in, int32_t nbInputs) const;
    cudaError_t launch(DType dt, const TensorDesc* in, int32_t nbInputs, const DeviceWeights& w,
                       const void* const* inputs, void* const* outputs, cudaStream_t stream) const;
};

} // namespace trtp
