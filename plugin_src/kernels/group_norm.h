// GroupNorm over NCHW (any rank >= 3: N, C, spatial...): s = x (+ bias[c]) (+ skip);
// y = act((s - mean_g) / sqrt(var_g + eps) * gamma[c] + beta[c]); FP32 statistics.
// Two launches: per-chunk partial statistics into a workspace, then merge + normalize.
#pragma once
#include <cuda_runtime_api.h>
#include <cstddef>
#include <cstdint>

#include "types.h"

namespace trtp {

enum class GroupNormAct : int32_t { kNone = 0, kSilu = 1 };

// How a skip input is added: none, like x, or one value per (n, c) ([N, C, 1, ...]: a time embedding).
enum class GroupNormSkip : int32_t { kNone = 0, kFull = 1, kPerChannel = 2 };

// How each group is split across CTAs: a pure function of (N, G, group size), no CUDA call.
struct GroupNormPlan {
    int64_t chunks = 0;   // CTAs per group
    int64_t chunkLen = 0; // elements per CTA (a multiple of 256; the last chunk may be shorter)
};

GroupNormPlan groupNormPlan(int64_t n, int64_t groups, int64_t groupSize);

// Workspace bytes for every shape with at most n * groups groups (any group size): what
// getWorkspaceSize returns for the largest shape of a profile.
size_t groupNormWorkspaceSize(int64_t n, int64_t groups);

struct GroupNormArgs {
    const void* x = nullptr;      // N x C x spatial, dtype dt
    const void* skip = nullptr;   // nullptr, like x, or N x C (skipMode)
    const float* bias = nullptr;  // nullptr or C FP32 values (device)
    const float* gamma = nullptr; // C FP32 values (device), required
    const float* beta = nullptr;  // nullptr or C FP32 values (device)
    void* y = nullptr;            // like x
    void* sum = nullptr;          // nullptr or like x: receives s (rounded to dt)
    void* workspace = nullptr;    // groupNormWorkspaceSize(n, groups) bytes (the launch checks the size)
    size_t workspaceSize = 0;
    int64_t n = 0, channels = 0, spatial = 0; // spatial = product of the dims after C
    int64_t groups = 1;
    float epsilon = 1e-5f;
    GroupNormSkip skipMode = GroupNormSkip::kNone;
    GroupNormAct act = GroupNormAct::kNone;
    GroupNormPlan plan = {};      // groupNormPlan(...) chosen when configured; chunks 0: chosen at launch
};

// n * channels * spatial == 0 launches nothing. Returns the launch status (never aborts);
// cudaErrorInvalidValue for bad arguments (channels % groups, a short workspace, ...).
cudaError_t launchGroupNorm(DType dt, const GroupNormArgs& args, cudaStream_t stream);

} // namespace trtp
