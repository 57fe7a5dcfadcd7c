// SkipNorm: s = x (+ skip) (+ bias); y = norm(s) * gamma (+ beta); optional output s.
#pragma once
#include "../common/plugin_base.h"
#include "../kernels/skip_norm.h"

namespace trtp {

class SkipNormPlugin : public PluginBase<SkipNormPlugin> {
public:
    static constexpr const char* kName = "SkipNorm";
    static constexpr int32_t kMinInputs = 1;
    static constexpr int32_t kMaxInputs = 2;

    struct Params {
        Norm norm = Norm::kLayer;
        float epsilon = 1e-5f;
        std::vector<float> gamma, beta, bias;
        bool outputSum = false;
    };
    explicit SkipNormPlugin(Params p);

    static std::vector<FieldSpec> schema();
    static SkipNormPlugin fromFields(const FieldParser& p);
    static SkipNormPlugin read(Reader& r);
    void write(Writer& w) const;

    int32_t getNbOutputs() const noexcept override { return mP.outputSum ? 2 : 1; }
    HostWeights weights() const { return {&mP.gamma, &mP.beta, &mP.bias}; }
    void checkDims(const nvinfer1::Dims* in, int32_t nbInputs) const;
    void onConfigured(DType dt, int64_t hidden);
    cudaError_t launch(DType dt, const nvinfer1::PluginTensorDesc* in, int32_t nbInputs, const DeviceWeights& w,
                       const void* const* inputs, void* const* outputs, cudaStream_t stream) const;

private:
    Params mP;
    // The kernel variant chosen when configured, for that dtype and hidden size.
    int32_t mVariant = -1;
    DType mVariantType = DType::kFloat32;
    int64_t mVariantHidden = -1;
};

} // namespace trtp
