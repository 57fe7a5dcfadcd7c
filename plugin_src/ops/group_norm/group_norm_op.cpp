#include "group_norm_op.h"

namespace trtp {
namespace {
constexpr EnumName<GroupNormAct> kActs[] = {{"none", GroupNormAct::kNone}, {"silu", GroupNormAct::kSilu}};
} // namespace

GroupNormOp::GroupNormOp(Params p) : OpBase(std::move(p)) {
    mP.check();
    if (mP.gamma.size() % static_cast<size_t>(mP.numGroups))
        fail("%zu channels (gamma values) are not divisible by num_groups %d", mP.gamma.size(), mP.numGroups);
}

const FieldTable<GroupNormOp::Params>& GroupNormOp::fields() {
    using F = Fields<Params>;
    static const FieldTable<Params> t =
        FieldTable<Params>{F::integer("num_groups", &Params::numGroups, {}, 1, {}, "divides C")} +
        NormWeights::fields<Params>(kEpsilon, "length == C (dim 1)") +
        FieldTable<Params>{F::choice("activation", &Params::act, kActs, GroupNormAct::kNone, "applied after gamma, beta"),
                           NormWeights::outputSumField<Params>()};
    return t;
}

const OpSchema& GroupNormOp::schema() {
    static const OpSchema s{
        kName,
        "s = x (+ bias per channel) (+ skip); y = act(GroupNorm(s) * gamma + beta) over N, C, spatial...; outputs y "
        "and, with output_sum, s.",
        fieldSpecs(fields()),
        {{"x", false, nullptr, "N, C, spatial... (rank >= 3)"},
         {"skip", true, nullptr, "like x, or [N, C, 1, ...] (one value per sample and channel)"}},
        {{"y", false, nullptr, "like x"}, {"sum", false, "output_sum", "s = x + bias + skip, like x"}},
    };
    return s;
}

bool GroupNormOp::acceptsFormat(DType dt, Format f, const Dims& x) {
    const bool typeOk = f == Format::kHWC || f == Format::kDHWC ? dt == DType::kFloat32
                        : f == Format::kHWC16                   ? dt == DType::kFloat16
                                                                : dt != DType::kFloat32; // HWC8, DHWC8
    if (!typeOk || x.nbDims != formatRank(f) || x.d[1] < 1) return false;
    const int64_t pad = channelPad(f), c = x.d[1];
    return groupNormChannelsLastOk(dt, c, (c + pad - 1) / pad * pad);
}

namespace {
// The kernel's layout and channel stride for a format and channel count.
void layoutOf(Format f, int64_t c, GroupNormLayout& layout, int64_t& stride) {
    const int64_t pad = channelPad(f);
    layout = pad ? GroupNormLayout::kChannelsLast : GroupNormLayout::kChannelsFirst;
    stride = pad ? (c + pad - 1) / pad * pad : 0;
}
} // namespace

void GroupNormOp::checkDims(const Dims* in, int32_t nbInputs) const {
    const auto& x = in[0];
    if (x.nbDims < 3) fail("input dims %s: rank %d, expected N, C, spatial... (rank >= 3)", dimsString(x).c_str(), x.nbDims);
    const int64_t c = x.d[1];
    if (c >= 0 && c != static_cast<int64_t>(mP.gamma.size()))
        fail("input dims %s: %lld channels (dim 1), gamma has %zu values", dimsString(x).c_str(), static_cast<long long>(c),
             mP.gamma.size());
    if (nbInputs < 2) return;
    // skip is like x, or [N, C, 1, ...] (the same rank): one value per sample and channel.
    const auto& s = in[1];
    bool same = s.nbDims == x.nbDims, perChannel = same;
    for (int32_t i = 0; i < s.nbDims && i < x.nbDims; ++i) {
        const bool match = x.d[i] < 0 || s.d[i] < 0 || x.d[i] == s.d[i];
        same = same && match;
        perChannel = perChannel && (i < 2 ? match : s.d[i] == 1);
    }
    if (!same && !perChannel)
        fail("skip dims %s are neither input dims %s nor [N, C, 1, ...]", dimsString(s).c_str(), dimsString(x).c_str());
}

void GroupNormOp::shape(const Dims& x, int64_t& n, int64_t& c, int64_t& spatial) {
    if (x.nbDims < 3 || x.nbDims > kMaxDims) fail("input rank %d, expected 3..%d", x.nbDims, kMaxDims);
    for (int32_t i = 0; i < x.nbDims; ++i)
        if (x.d[i] < 0) fail("input dims %s are not known", dimsString(x).c_str());
    n = x.d[0];
    c = x.d[1];
    spatial = 1;
    for (int32_t i = 2; i < x.nbDims; ++i) spatial *= x.d[i];
}

GroupNormSkip GroupNormOp::skipMode(const Dims* skip, int64_t spatial) {
    if (!skip) return GroupNormSkip::kNone;
    int64_t n, c, skipSpatial;
    shape(*skip, n, c, skipSpatial);
    return skipSpatial == spatial ? GroupNormSkip::kFull : GroupNormSkip::kPerChannel;
}

// The design and split for this shape and format, on this GPU (the device query happens here, never
// in enqueue). TensorRT's buffers are 256-byte aligned.
void GroupNormOp::onConfiguredDims(DType dt, Format f, const Dims* in, int32_t nbInputs) {
    if (nbInputs > 1 && !allKnown(in[1])) return; // a later configure with every dim known plans
    int64_t n, c, spatial;
    shape(in[0], n, c, spatial);
    const PlanKey key{dt, f, n, spatial, skipMode(nbInputs > 1 ? &in[1] : nullptr, spatial)};
    GroupNormShape s;
    s.n = n, s.channels = c, s.spatial = spatial, s.groups = mP.numGroups, s.skip = key.skip;
    layoutOf(f, c, s.layout, s.channelStride);
    const GroupNormChoice choice = groupNormChoose(dt, s, mP.act);
    mPlan = choice.plan, mResidentPlan = choice.resident;
    mPlanKey = key;
}

// The bound covers every shape up to the largest batch (the partials depend on N * groups only).
size_t GroupNormOp::workspaceSize(Format f, const Dims* in, int32_t) const {
    const auto& x = in[0];
    if (x.nbDims < 1 || x.d[0] < 0) fail("input dims %s: the batch size must be known", dimsString(x).c_str());
    return groupNormWorkspaceSize(x.d[0] > 0 ? x.d[0] : 1, mP.numGroups,
                                  channelPad(f) ? GroupNormLayout::kChannelsLast : GroupNormLayout::kChannelsFirst);
}

cudaError_t GroupNormOp::launch(DType dt, const TensorDesc* in, int32_t nbInputs, const DeviceWeights& w,
                                const void* const* inputs, void* const* outputs, void* workspace, cudaStream_t stream) const {
    GroupNormArgs a;
    shape(in[0].dims, a.n, a.channels, a.spatial);
    a.x = inputs[0];
    a.skipMode = skipMode(nbInputs > 1 ? &in[1].dims : nullptr, a.spatial);
    if (nbInputs > 1) a.skip = inputs[1];
    a.gamma = w.at(0);
    a.beta = w.at(1);
    a.bias = w.at(2);
    a.y = outputs[0];
    a.sum = mP.outputSum ? outputs[1] : nullptr;
    a.groups = mP.numGroups;
    a.epsilon = mP.epsilon;
    a.act = mP.act;
    layoutOf(in[0].format, a.channels, a.layout, a.channelStride);
    a.workspace = workspace;
    a.workspaceSize = groupNormWorkspaceSize(a.n, mP.numGroups, a.layout); // TensorRT gave at least this (the profile's max batch)
    if (mPlanKey == PlanKey{dt, in[0].format, a.n, a.spatial, a.skipMode}) { // else two launches (no query here)
        a.plan = mPlan;
        a.resident = mResidentPlan; // channels-first: a grid of 0 runs the split design
    }
    if (!workspace) fail("no workspace (getWorkspaceSize asked for %zu bytes)", a.workspaceSize);
    return launchGroupNorm(dt, a, stream);
}

} // namespace trtp
