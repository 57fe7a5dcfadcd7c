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

NormWeights NormWeights::fromFields(const FieldParser& f, float defaultEpsilon) {
    NormWeights p;
    p.epsilon = f.float32("epsilon").value_or(defaultEpsilon);
    p.gamma = FieldParser::required(f.weights("gamma"), "gamma");
    p.beta = f.weights("beta").value_or(std::vector<float>{});
    p.bias = f.weights("bias").value_or(std::vector<float>{});
    const int32_t sum = f.int32("output_sum").value_or(0);
    if (sum != 0 && sum != 1) fail("output_sum must be 0 or 1, got %d", sum);
    p.outputSum = sum == 1;
    return p;
}

void NormWeights::toFields(FieldWriter& w) const {
    w.float32("epsilon", epsilon);
    w.weights("gamma", gamma);
    w.weights("beta", beta);
    w.weights("bias", bias);
    w.int32("output_sum", outputSum ? 1 : 0);
}

NormWeights NormWeights::read(Reader& r) {
    NormWeights p;
    p.epsilon = r.pod<float>();
    const auto sum = r.pod<int32_t>();
    if (sum != 0 && sum != 1) fail("serialized output_sum %d is invalid", sum);
    p.outputSum = sum == 1;
    p.gamma = r.floats();
    p.beta = r.floats();
    p.bias = r.floats();
    return p;
}

void NormWeights::write(Writer& w) const {
    w.pod(epsilon);
    w.pod(static_cast<int32_t>(outputSum));
    w.floats(gamma);
    w.floats(beta);
    w.floats(bias);
}

} // namespace trtp
