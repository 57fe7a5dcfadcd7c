// y = act(gate + gate_bias) * (linear + linear_bias): a gated linear unit (SwiGLU, GEGLU, ReGLU) in one
// launch, the two operands two tensors or the two halves of one tensor's last dim.
#pragma once
#include <cuda_runtime_api.h>
#include <cstdint>

#include "types.h"

namespace trtp {

// Which operand the activation applies to: the first or the second (half or tensor).
enum class GateOperand : int32_t { kFirst = 0, kSecond = 1 };

struct GatedActivationArgs {
    const void* x = nullptr;  // rows x 2 width: the operands are its halves; or, with x2, rows x width
    const void* x2 = nullptr; // nullptr, or the second operand: rows x width
    const float* gateBias = nullptr;   // nullptr or width FP32 values on the device, added to the activated operand
    const float* linearBias = nullptr; // likewise, added to the other operand
    void* y = nullptr;                 // rows x width; may alias x or x2 when both are given, never a half of x
    int64_t rows = 0, width = 0;
    Activation act = Activation::kSilu; // relu, gelu, gelu_tanh or silu
    GateOperand gate = GateOperand::kFirst;
};

// Row-major, dtype `dt`, FP32 math. rows == 0 launches nothing. Returns the launch status (never aborts).
cudaError_t launchGatedActivation(DType dt, const GatedActivationArgs& a, cudaStream_t stream);

} // namespace trtp
