// y = act(x + bias): one launch, bias (optional) broadcast over the last dim.
#pragma once
#include <cuda_runtime_api.h>
#include <cstdint>

#include "types.h"

namespace trtp {

enum class Activation : int32_t {
    kIdentity = 0,
    kRelu = 1,
    kRelu6 = 2,     // clip(x, 0, 6)
    kGelu = 3,      // 0.5 x (1 + erf(x / sqrt 2))
    kGeluTanh = 4,  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    kSilu = 5,      // x sigmoid(x)
    kQuickGelu = 6, // x sigmoid(1.702 x)
    kHardSwish = 7, // x clip(x + 3, 0, 6) / 6
};

// x, y: rows x hidden, row-major, dtype `dt`; y may alias x.
// bias: nullptr or `hidden` FP32 values on the device.
// rows == 0 launches nothing. Returns the launch status (never aborts).
cudaError_t launchBiasActivation(DType dt, const void* x, const float* bias, void* y, int64_t rows, int64_t hidden,
                                 Activation act, cudaStream_t stream);

} // namespace trtp
