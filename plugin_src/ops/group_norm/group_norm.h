// GroupNorm over NCHW (any rank >= 3: N, C, spatial...): s = x (+ bias[c]) (+ skip);
// y = act((s - mean_g) / sqrt(var_g + eps) * gamma[c] + beta[c]); FP32 statistics.
// Two paths (group_norm.cu): on sm_90+ one launch, each group split across the CTAs of a thread-block
// cluster that hold their chunks in shared memory and exchange partial statistics through distributed
// shared memory; elsewhere, and for groups a cluster cannot hold, two launches through a workspace.
#pragma once
#include <cuda_runtime_api.h>
#include <cstddef>
#include <cstdint>

#include "types.h"

namespace trtp {

enum class GroupNormAct : int32_t { kNone = 0, kSilu = 1 };

// How a skip input is added: none, like x, or one value per (n, c) ([N, C, 1, ...]: a time embedding).
enum class GroupNormSkip : int32_t { kNone = 0, kFull = 1, kPerChannel = 2 };

// How each group is split across CTAs, chosen when the plugin is configured.
struct GroupNormPlan {
    int64_t chunks = 0;   // CTAs per group (cluster: the cluster size, 1..16)
    int64_t chunkLen = 0; // elements per CTA (a multiple of 256; the last chunk may be shorter)
    bool cluster = false; // true: one launch, a group's CTAs form one cluster (sm_90+); false: two launches
};

// What the cluster path needs to know about a GPU.
struct GroupNormDevice {
    int32_t sms = 0;          // multiprocessors
    int32_t smemPerSm = 0;    // shared memory bytes per multiprocessor
    int32_t smemPerBlock = 0; // dynamic shared memory bytes a cluster CTA may use (the opt-in, less static)
    int32_t maxCluster = 0;   // the largest cluster: 0 (no clusters), 8 (portable) or 16 (non-portable allowed)
};

// The current GPU, queried once per device; on a GPU with clusters it also sets the cluster kernels'
// attributes there (shared memory opt-in, non-portable sizes). {} (two launches) below sm_90, without
// an sm_90+ image of the kernels, without a device, or on any error (cleared).
GroupNormDevice groupNormDevice() noexcept;

// The plan for a shape: a pure function of its arguments. dev {}: the two-launch split (~4 CTAs per
// H200 SM in all). With clusters: the smallest power-of-two cluster whose chunks leave room for 4 CTAs
// per SM and that gives >= 3 CTAs per SM in all (at most 8; 16 only when 8 CTAs cannot hold a group),
// unless a group does not fit or the clusters would keep fewer SMs busy than the two launches.
GroupNormPlan groupNormPlan(DType dt, int64_t n, int64_t groups, int64_t groupSize, GroupNormSkip skip,
                            const GroupNormDevice& dev = {});

// What the plugin picks when configured: groupNormPlan on groupNormDevice(), a cluster plan kept only
// when the GPU can run one of its clusters (cudaOccupancyMaxActiveClusters), else the two launches.
GroupNormPlan groupNormConfigure(DType dt, int64_t n, int64_t groups, int64_t groupSize, GroupNormSkip skip) noexcept;

// Workspace bytes for every shape with at most n * groups groups (any group size): what
// getWorkspaceSize returns for the largest shape of a profile. The cluster path needs none, but a
// launch may fall back to two launches, so it is always asked for.
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
    float epsilon = 0.f;          // > 0 (the op declaration holds its default)
    GroupNormSkip skipMode = GroupNormSkip::kNone;
    GroupNormAct act = GroupNormAct::kNone;
    GroupNormPlan plan = {};      // groupNormConfigure(...) when configured; not a plan of this shape: two launches
};

// n * channels * spatial == 0 launches nothing. Returns the launch status (never aborts);
// cudaErrorInvalidValue for bad arguments (channels % groups, a short workspace, ...). A cluster plan
// whose launch fails (another device or context than configured) runs as two launches instead.
// `ran`: receives the plan that ran (tests, benchmarks).
cudaError_t launchGroupNorm(DType dt, const GroupNormArgs& args, cudaStream_t stream, GroupNormPlan* ran = nullptr);

} // namespace trtp
