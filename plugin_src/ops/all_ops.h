// THE list of ops: one line each. The plugin libraries make a V2 and a V3 creator of each
// (registry/creators.cpp); the C entry runs each by name (capi/run.cpp); the schema lists each.
#pragma once
#include <string>
#include <vector>

#include "bias_activation/bias_activation_op.h"
#include "gated_activation/gated_activation_op.h"
#include "group_norm/group_norm_op.h"
#include "legacy_gelu/legacy_gelu_op.h"
#include "skip_norm/skip_norm_op.h"

namespace trtp {

// Plugin versions: the same op under two interfaces in one library.
constexpr const char* kV2Version = "1"; // IPluginV2DynamicExt + IPluginCreator (deprecated by TensorRT; existing engines)
constexpr const char* kV3Version = "2"; // IPluginV3 (OneCore/Build/Runtime) + IPluginCreatorV3One

template <class... Ops>
struct OpList {
    template <template <class...> class F>
    using Apply = F<Ops...>;
    static std::vector<const OpSchema*> schemas() { return {&Ops::schema()...}; }
};

using AllOps = OpList<
    BiasActivationOp,
    GatedActivationOp,
    SkipNormOp,
    GroupNormOp,
    LegacyGeluOp>; // TensorRT OSS's CustomGeluPluginDynamic (removed in 11.0), computed by BiasActivation's kernel

// The schema of every op as JSON (trtplugins/schema.json is this text).
std::string schemaJson();

} // namespace trtp
