// The shapes and tensor descriptions op declarations take: TensorRT-free (the adapters convert
// nvinfer1::Dims64 and PluginTensorDesc, plain structs of the same fields), so the declarations build
// into the kernel library, which every plugin library shares.
#pragma once
#include <cstdint>
#include <string>

#include "../device/types.h"

namespace trtp {

constexpr int32_t kMaxDims = 8; // nvinfer1::Dims::MAX_DIMS

struct Dims {
    int32_t nbDims = 0;
    int64_t d[kMaxDims] = {};
};

struct TensorDesc {
    Dims dims;
    DType type = DType::kFloat32;
};

// rows = product of all but the last dim; throws on a rank out of 1..kMaxDims or unknown (< 0) dims.
void rowsAndHidden(const Dims& d, int64_t& rows, int64_t& hidden);
std::string dimsString(const Dims& d);
// Rank >= 1 and every dim known (>= 0).
bool allKnown(const Dims& d);

} // namespace trtp
