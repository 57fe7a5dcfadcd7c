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

// The memory layouts a declaration may accept besides linear: TensorRT's channels-last formats (the
// adapters map TensorFormat to these), the channel dim third (HWC) or fourth (DHWC) to last, padded to
// a multiple of channelPad.
enum class Format : int32_t { kLinear = 0, kHWC = 1, kHWC8 = 2, kHWC16 = 3, kDHWC = 4, kDHWC8 = 5 };
// Channels padded to a multiple of this (1: none); 0 for kLinear.
int32_t channelPad(Format f);
// The rank a channels-last format has (HWC 4, DHWC 5); 0 for kLinear (any).
int32_t formatRank(Format f);
const char* formatName(Format f);

struct TensorDesc {
    Dims dims;
    DType type = DType::kFloat32;
    Format format = Format::kLinear;
};

// rows = product of all but the last dim; throws on a rank out of 1..kMaxDims or unknown (< 0) dims.
void rowsAndHidden(const Dims& d, int64_t& rows, int64_t& hidden);
std::string dimsString(const Dims& d);
// Rank >= 1 and every dim known (>= 0).
bool allKnown(const Dims& d);

} // namespace trtp
