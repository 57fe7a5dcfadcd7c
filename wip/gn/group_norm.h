// GroupNorm over N, C, spatial... in either layout: s = x (+ bias[c]) (+ skip);
// y = act((s - mean_g) / sqrt(var_g + eps) * gamma[c] + beta[c]); FP32 statistics.
//   channels-first (NCHW, TensorRT kLINEAR): x[n][c][p];
//   channels-last (NHWC, TensorRT kHWC8 / kHWC16 / kHWC / kDHWC8 / kDHWC): x[n][p][cs], channels padded
//   to a stride cs >= C; the pad is never read into the statistics and is written as zero in y and s.
// One launch on every GPU with cooperative launches (group_norm.cu says how), two otherwise.
#pragma once
#include <cuda_runtime_api.h>
#include <cstddef>
#include <cstdint>

#include "types.h"

namespace trtp {

enum class GroupNormAct : int32_t { kNone = 0, kSilu = 1 };

// How a skip input is added: none, like x, or one value per (n, c) ([N, C, 1, ...]: a time embedding;
// channels-last: padded to the channel stride like x).
enum class GroupNormSkip : int32_t { kNone = 0, kFull = 1, kPerChannel = 2 };

enum class GroupNormLayout : int32_t { kChannelsFirst = 0, kChannelsLast = 1 };

// How the work is split, chosen when the plugin is configured (groupNormConfigure). Each CTA owns a
// contiguous range of `per` units (an element channels-first, a pixel channels-last) and keeps the last
// `resident` of them in shared memory between the statistics and the normalization.
struct GroupNormPlan {
    int32_t grid = 0;     // CTAs (<= kGroupNormMaxCtas)
    int64_t per = 0;      // units per CTA
    int64_t resident = 0; // units per CTA held on chip (0: every unit read twice)
    bool fused = false;   // true: one cooperative launch (a grid-wide barrier); false: two launches
};

constexpr int32_t kGroupNormMaxCtas = 1024;

// A problem: what the plan and the launch need to know besides pointers.
struct GroupNormShape {
    int64_t n = 0, channels = 0, spatial = 0; // spatial = product of the dims after C
    int64_t groups = 1;
    int64_t channelStride = 0; // channels-last: elements between pixels (>= channels; 0: channels)
    GroupNormLayout layout = GroupNormLayout::kChannelsFirst;
    GroupNormSkip skip = GroupNormSkip::kNone;
};

// What the plan needs to know about a GPU (queried once per device).
struct GroupNormDevice {
    int32_t sms = 0;          // multiprocessors
    int32_t smemPerBlock = 0; // dynamic shared memory a CTA may opt into
    bool cooperative = false; // cooperative launches
};
GroupNormDevice groupNormDevice() noexcept;

// The plan for a shape: a pure function of its arguments (dev {}: two launches). Aligned: every pointer
// 16-byte aligned (the 16-byte path needs it).
GroupNormPlan groupNormPlan(DType dt, const GroupNormShape& s, bool aligned, const GroupNormDevice& dev = {});

// What the plugin picks when configured: groupNormPlan on this GPU, fused only where the GPU can hold
// the grid's CTAs at once (occupancy), else two launches.
GroupNormPlan groupNormConfigure(DType dt, const GroupNormShape& s, bool aligned) noexcept;

// Workspace bytes for every shape with at most n samples and this many groups: what getWorkspaceSize
// returns for a profile's largest batch.
size_t groupNormWorkspaceSize(int64_t n, int64_t groups);

// Whether a channels-last shape has a kernel (channel stride and packs per pixel within a CTA's threads).
bool groupNormChannelsLastOk(DType dt, int64_t channels, int64_t channelStride);

struct GroupNormArgs {
    GroupNormShape shape;
    const void* x = nullptr;      // dtype dt, in the shape's layout
    const void* skip = nullptr;   // nullptr, like x, or per channel ([N, C] / [N, cs])
    const float* bias = nullptr;  // nullptr or C FP32 values (device)
    const float* gamma = nullptr; // C FP32 values (device), required
    const float* beta = nullptr;  // nullptr or C FP32 values (device)
    void* y = nullptr;            // like x
    void* sum = nullptr;          // nullptr or like x: receives s (rounded to dt)
    void* workspace = nullptr;    // groupNormWorkspaceSize(n, groups) bytes, 16-byte aligned
    size_t workspaceSize = 0;
    float epsilon = 1e-5f;
    GroupNormAct act = GroupNormAct::kNone;
    GroupNormPlan plan = {};      // groupNormConfigure's for this shape; another: two launches
};

// n * channels * spatial == 0 launches nothing. Returns the launch status (never aborts);
// cudaErrorInvalidValue for bad arguments. y and s may alias x or skip. A fused plan whose cooperative
// launch is refused (another device, a smaller MPS share) runs as two launches. `ran`: the plan that ran.
cudaError_t launchGroupNorm(DType dt, const GroupNormArgs& args, cudaStream_t stream, GroupNormPlan* ran = nullptr);

} // namespace trtp
