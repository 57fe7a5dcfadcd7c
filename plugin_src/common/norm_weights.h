// What the norm ops share (SkipNorm, GroupNorm): epsilon, per-channel (or per-hidden) gamma / beta /
// bias and the optional sum output, with their checks and field-table entries.
#pragma once
#include <vector>

#include "field_table.h"

namespace trtp {

struct NormWeights {
    float epsilon;
    std::vector<float> gamma, beta, bias; // beta, bias: empty or gamma's length
    int32_t outputSum;                    // 1: a second output, the sum s

    // Throws: epsilon not finite and > 0, no gamma, beta or bias of another length.
    void check() const;

    // Entries epsilon (default `epsilon`), gamma (required), beta and bias (`length`: how long each is).
    template <class P>
    static FieldTable<P> fields(float epsilon, const char* length) {
        using F = Fields<P>;
        return {F::real("epsilon", &NormWeights::epsilon, epsilon, "> 0"), F::weights("gamma", &NormWeights::gamma, true, length),
                F::weights("beta", &NormWeights::beta, false, length), F::weights("bias", &NormWeights::bias, false, length)};
    }
    template <class P>
    static Field<P> outputSumField() {
        return Fields<P>::integer("output_sum", &NormWeights::outputSum, 0, 0, 1, "0 or 1: second output s");
    }
};

} // namespace trtp
