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

bool allKnown(const Dims& d) {
    for (int32_t i = 0; i < d.nbDims && i < kMaxDims; ++i)
        if (d.d[i] < 0) return false;
    return d.nbDims >= 1 && d.nbDims <= kMaxDims;
}

} // namespace trtp
