// SkipNorm: s = x (+ skip) (+ bias); y = norm(s) * gamma (+ beta); optional output s.
// The op declaration (see common/op.h for what an op provides).
#pragma once
#include "../../common/op.h"
#include "skip_norm.h"
#include "../../common/norm_weights.h"

namespace trtp {

struct SkipNormParams : NormWeights {
    Norm norm;
};

class SkipNormOp : public OpBase<SkipNormParams> {
public:
    static constexpr const char* kName = "SkipNorm";
    static constexpr float kEpsilon = 1e-5f; // the default: the one place it is written
    static const FieldTable<Params>& fields();
    static const OpSchema& schema();
    static constexpr const char* kV1Layout[] = {"norm", "epsilon", "output_sum", "gamma", "beta", "bias"}; // blobs of format 1

    explicit SkipNormOp(Params p);

    int32_t nbOutputs() const noexcept { return mP.outputSum ? 2 : 1; }
    // gamma, beta, bias (FP32), then gamma and beta in FP16 and in BF16 (two values per float) where
    // every value is exact there (else empty): 16-bit launches read half the weight bytes.
    HostWeights weights() const { return {&mP.gamma, &mP.beta, &mP.bias, &mIo[0][0], &mIo[0][1], &mIo[1][0], &mIo[1][1]}; }
    void checkDims(const Dims* in, int32_t nbInputs) const;
    void onConfigured(DType dt, int64_t hidden);
    cudaError_t launch(DType dt, const TensorDesc* in, int32_t nbInputs, const DeviceWeights& w,
                       const void* const* inputs, void* const* outputs, cudaStream_t stream) const;

private:
    std::vector<float> mIo[2][2]; // [FP16, BF16][gamma, beta], packed 16-bit values
    // The kernel variants chosen when configured (without and with a skip input; large and small
    // launches), for that dtype and hidden size, and their grids on the device configured.
    int32_t mVariant[2] = {-1, -1};
    int32_t mSmallVariant[2] = {-1, -1}; // for small launches (skipNormSmall)
    int32_t mMaxBlocks[2] = {};
    DType mVariantType = DType::kFloat32;
    int64_t mVariantHidden = -1;
};

} // namespace trtp
