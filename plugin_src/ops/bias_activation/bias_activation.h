// y = act(x + bias): one launch, bias (optional) broadcast over the last dim.
#pragma once
#include <cuda_runtime_api.h>
#include <cstdint>

#include "types.h"

namespace trtp {

// x, y: rows x hidden, row-major, dtype `dt`; y may alias x.
// bias: nullptr or `hidden` FP32 values on the device.
// rows == 0 launches nothing. Returns the launch status (never aborts).
cudaError_t launchBiasActivation(DType dt, const void* x, const float* bias, void* y, int64_t rows, int64_t hidden,
                                 Activation act, cudaStream_t stream);

} // namespace trtp
