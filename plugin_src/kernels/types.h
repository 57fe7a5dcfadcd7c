// Shared kernel-side types. No TensorRT include: kernels build and test alone.
#pragma once
#include <cstdint>

namespace trtp {

enum class DType : int32_t { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

} // namespace trtp
