// BiasActivation: y = act(x + bias), the bias Add in front of an activation folded in.
#pragma once
#include "../common/plugin_base.h"
#include "../kernels/bias_activation.h"

namespace trtp {

class BiasActivationPlugin : public PluginBase<BiasActivationPlugin> {
public:
    static constexpr const char* kName = "BiasActivation";
    static constexpr int32_t kMinInputs = 1;
    static constexpr int32_t kMaxInputs = 1;

    BiasActivationPlugin(Activation act, std::vector<float> bias);

    static std::vector<FieldSpec> schema();
    static BiasActivationPlugin fromFields(const FieldParser& p);
    static BiasActivationPlugin read(Reader& r);
    void write(Writer& w) const;

    int32_t getNbOutputs() const noexcept override { return 1; }
    HostWeights weights() const { return {&mBias}; }
    void checkDims(const nvinfer1::Dims* in, int32_t nbInputs) const;
    cudaError_t launch(DType dt, const nvinfer1::PluginTensorDesc* in, int32_t nbInputs, const DeviceWeights& w,
                       const void* const* inputs, void* const* outputs, cudaStream_t stream) const;

private:
    Activation mAct;
    std::vector<float> mBias;
};

} // namespace trtp
