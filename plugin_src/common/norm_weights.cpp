#include "norm_weights.h"

#include <cmath>

#include "errors.h"

namespace trtp {

void NormWeights::check() const {
    if (!(std::isfinite(epsilon) && epsilon > 0.f)) fail("epsilon must be finite and > 0, got %g", epsilon);
    if (gamma.empty()) fail("gamma must have at least one value");
    const size_t n = gamma.size();
    if (!beta.empty() && beta.size() != n) fail("beta has %zu values, gamma has %zu", beta.size(), n);
    if (!bias.empty() && bias.size() != n) fail("bias has %zu values, gamma has %zu", bias.size(), n);
}

} // namespace trtp
