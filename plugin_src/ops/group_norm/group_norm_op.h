// GroupNorm: s = x (+ bias[c]) (+ skip); y = act(GN(s) * gamma + beta) over N, C, spatial... (rank >= 3);
// optional output s. Linear, or channels-last (HWC8 / HWC16 / HWC, DHWC8 / DHWC) where the kernel has
// it. The op declaration (see common/op.h; it uses the format and workspace hooks).
#pragma once
#include "../../common/op.h"
#include "group_norm.h"
#include "../../common/norm_weights.h"

namespace trtp {

struct GroupNormParams : NormWeights { // gamma, beta, bias: one value per channel
    int32_t numGroups;
    GroupNormAct act;
};

class GroupNormOp : public OpBase<GroupNormParams> {
public:
    static constexpr const char* kName = "GroupNorm";
    static constexpr float kEpsilon = 1e-5f; // the default (torch.nn.GroupNorm's): the one place it is written
    static const FieldTable<Params>& fields();
    static const OpSchema& schema();
    static constexpr const char* kV1Layout[] = {"num_groups", "activation", "epsilon", "output_sum",
                                                "gamma",      "beta",       "bias"}; // blobs of format 1

    explicit GroupNormOp(Params p);

    int32_t nbOutputs() const noexcept { return mP.outputSum ? 2 : 1; }
    HostWeights weights() const { return {&mP.gamma, &mP.beta, &mP.bias}; }
    // Channels-last formats for the I/O types TensorRT defines them for, with C known and a row of
    // packs of a pixel within a CTA's threads.
    static bool acceptsFormat(DType dt, Format f, const Dims& x);
    void checkDims(const Dims* in, int32_t nbInputs) const;
    void onConfiguredDims(DType dt, Format f, const Dims* in, int32_t nbInputs);
    size_t workspaceSize(Format f, const Dims* in, int32_t nbInputs) const;
    cudaError_t launch(DType dt, const TensorDesc* in, int32_t nbInputs, const DeviceWeights& w,
                       const void* const* inputs, void* const* outputs, void* workspace, cudaStream_t stream) const;

private:
    // x's dims as (n, channels, spatial); throws on unknown dims.
    static void shape(const Dims& x, int64_t& n, int64_t& c, int64_t& spatial);
    // How a skip input of these dims (nullptr: none) is added to x of `spatial` elements per channel.
    static GroupNormSkip skipMode(const Dims* skip, int64_t spatial);
    // The plan chosen when configured (groupNormConfigure: path and split), for that shape.
    struct PlanKey {
        DType dt = DType::kFloat32;
        Format format = Format::kLinear;
        int64_t n = -1, spatial = -1;
        GroupNormSkip skip = GroupNormSkip::kNone;
        bool operator==(const PlanKey& o) const {
            return dt == o.dt && format == o.format && n == o.n && spatial == o.spatial && skip == o.skip;
        }
    };
    GroupNormPlan mPlan;                 // groupNormChoose's: channels-first, the split design
    GroupNormResidentPlan mResidentPlan; // and the resident design, where chosen
    PlanKey mPlanKey;
};

} // namespace trtp
