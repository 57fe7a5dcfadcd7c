#include "tensor.h"

#include "errors.h"

namespace trtp {

std::string dimsString(const Dims& d) {
    std::string s = "[";
    for (int32_t i = 0; i < d.nbDims && i < kMaxDims; ++i) s += (i ? "," : "") + std::to_string(d.d[i]);
    return s + "]";
}

void rowsAndHidden(const Dims& d, int64_t& rows, int64_t& hidden) {
    if (d.nbDims < 1 || d.nbDims > kMaxDims) fail("input rank %d, expected 1..%d", d.nbDims, kMaxDims);
    rows = 1;
    for (int32_t i = 0; i < d.nbDims; ++i)
        if (d.d[i] < 0) fail("input dims %s are not known", dimsString(d).c_str());
    for (int32_t i = 0; i + 1 < d.nbDims; ++i) rows *= d.d[i];
    hidden = d.d[d.nbDims - 1];
}

int32_t channelPad(Format f) {
    switch (f) {
    case Format::kHWC: case Format::kDHWC: return 1;
    case Format::kHWC8: case Format::kDHWC8: return 8;
    case Format::kHWC16: return 16;
    default: return 0;
    }
}

int32_t formatRank(Format f) {
    switch (f) {
    case Format::kHWC: case Format::kHWC8: case Format::kHWC16: return 4;
    case Format::kDHWC: case Format::kDHWC8: return 5;
    default: return 0;
    }
}

const char* formatName(Format f) {
    switch (f) {
    case Format::kLinear: return "LINEAR";
    case Format::kHWC: return "HWC";
    case Format::kHWC8: return "HWC8";
    case Format::kHWC16: return "HWC16";
    case Format::kDHWC: return "DHWC";
    case Format::kDHWC8: return "DHWC8";
    }
    return "?";
}

bool allKnown(const Dims& d) {
    for (int32_t i = 0; i < d.nbDims && i < kMaxDims; ++i)
        if (d.d[i] < 0) return false;
    return d.nbDims >= 1 && d.nbDims <= kMaxDims;
}

} // namespace trtp
