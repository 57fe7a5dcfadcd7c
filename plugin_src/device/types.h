// Shared kernel-side types. No TensorRT include: kernels build and test alone.
#pragma once
#include <cstdint>

namespace trtp {

enum class DType : int32_t { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

// The activations a kernel applies (activations.cuh): the ids ops declare and ctypes passes.
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

} // namespace trtp
