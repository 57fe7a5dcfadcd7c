// What the norm ops share: epsilon, per-channel (or per-hidden) gamma / beta / bias and the
// optional sum output, with their checks, creator fields and blob layout (SkipNorm, GroupNorm).
#pragma once
#include <vector>

#include "fields.h"
#include "serialize.h"

namespace trtp {

struct NormWeights {
    float epsilon = 1e-5f;
    std::vector<float> gamma, beta, bias; // beta, bias: empty or gamma's length
    bool outputSum = false;

    // Throws: epsilon not finite and > 0, no gamma, beta or bias of another length.
    void check() const;
    // Fields epsilon (default kDefault), gamma (required), beta, bias, output_sum (0 or 1).
    static NormWeights fromFields(const FieldParser& f, float defaultEpsilon);
    void toFields(FieldWriter& w) const;
    // Blob: epsilon, output_sum, gamma, beta, bias.
    static NormWeights read(Reader& r);
    void write(Writer& w) const;
};

} // namespace trtp
