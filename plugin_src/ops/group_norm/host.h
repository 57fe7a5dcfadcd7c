// Host code both GroupNorm designs share: workspace rounding (device queries: per_device.h).
#pragma once
#include <cstddef>

#include "per_device.h"

namespace trtp {
namespace gn {

constexpr size_t kWsAlign = 256;
inline size_t roundUp(size_t v) { return (v + kWsAlign - 1) / kWsAlign * kWsAlign; }

} // namespace gn
} // namespace trtp
