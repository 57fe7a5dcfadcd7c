// GroupNorm over N, C, spatial... (rank >= 3): s = x (+ bias[c]) (+ skip);
// y = act((s - mean_g) / sqrt(var_g + eps) * gamma[c] + beta[c]); FP32 statistics. Two layouts:
//   channels-first (TensorRT kLINEAR): x[n][c][p];
//   channels-last (kHWC8, kHWC16, kHWC, kDHWC8, kDHWC): x[n][p][cs], the channels padded to a stride
//   cs >= C; the pad is never read into the statistics and is written as zero in y and s.
// Two designs:
//   split (channels-first; group_norm.cu, kernels.cuh): each group split into chunks of one CTA; on
//     sm_90+ one launch whose chunks of a group form a thread-block cluster (distributed shared
//     memory), else two launches through a workspace;
//   resident (either layout; resident.cu, resident*.cuh): each CTA owns a contiguous range of the
//     tensor and keeps what fits of it in shared memory; one launch with a barrier between the
//     statistics and the normalization (grid-wide and cooperative, a cluster's, or a CTA's own where
//     it holds whole groups), or two launches.
// The plugin picks per shape (measured: RESULTS.md, GroupNorm): channels-first the resident design where
// groupNormResidentFirst, else the split one; channels-last the resident one.
#pragma once
#include <cuda_runtime_api.h>
#include <cstddef>
#include <cstdint>

#include "types.h"

namespace trtp {

enum class GroupNormAct : int32_t { kNone = 0, kSilu = 1 };

// How a skip input is added: none, like x, or one value per (n, c) ([N, C, 1, ...]: a time embedding).
enum class GroupNormSkip : int32_t { kNone = 0, kFull = 1, kPerChannel = 2 };

enum class GroupNormLayout : int32_t { kChannelsFirst = 0, kChannelsLast = 1 };

// A problem as the resident design sees it.
struct GroupNormShape {
    int64_t n = 0, channels = 0, spatial = 0; // spatial = product of the dims after C
    int64_t groups = 1;
    GroupNormLayout layout = GroupNormLayout::kChannelsFirst;
    int64_t channelStride = 0; // channels-last: elements between pixels (>= channels; 0: channels)
    GroupNormSkip skip = GroupNormSkip::kNone;
};

// The resident design's split: `grid` CTAs, each a contiguous range of `per` units (an element
// channels-first, a pixel channels-last) whose last `resident` stay in shared memory between the
// statistics and the normalization (the rest is read twice, the second time mostly from L2).
// Channels-last whole-segment plans may cut each range's channels into windows of whole groups: grid
// is then ceil(units / per) x windows, a CTA per range and window.
// Cluster plans cut each segment (a group channels-first, a sample's window of groups channels-last) into
// `cluster` ranges, the CTAs of one thread-block cluster (sm_90+): a cluster barrier between the phases, no
// grid-wide one, any number of CTAs.
struct GroupNormResidentPlan {
    int32_t grid = 0;
    int64_t per = 0, resident = 0;
    bool fused = false;  // one launch (every CTA resident at once unless local or in clusters), else two
    bool narrow = false; // 16-bit channels-last in 8-byte packs (64 registers: two CTAs fit an SM)
    int32_t cluster = 0; // CTAs per cluster (2-8: a cluster plan), 0 none
};

// What the resident design needs to know about a GPU.
struct GroupNormResidentDevice {
    int32_t sms = 0;          // multiprocessors (0: no cooperative launch, two launches)
    int32_t smemPerBlock = 0; // dynamic shared memory a CTA may opt into
    int32_t ctasPerSm = 1;    // fused CTAs per SM the plan is for (2: each a share of the SM's shared memory,
                              // 16-bit channels-last narrow); the plugin plans for 1 (2 is forced to measure it)
    int32_t windows = 1;      // channels-last fused plans: channel windows of whole groups per range (0: as
                              // many as whole 16-byte packs allow); groupNormResidentPick sets it where it pays
    int32_t maxCluster = 0;   // the largest thread-block cluster it runs the resident kernel in (0: none)
};
GroupNormResidentDevice groupNormResidentDevice() noexcept;

// The resident plan for a shape: a pure function of its arguments (dev {}: two launches). aligned:
// every pointer 16-byte aligned. A grid of 0: no plan (a channels-last row of packs wider than a
// CTA's threads, or segments too short for a CTA's shared arrays).
GroupNormResidentPlan groupNormResidentPlan(DType dt, const GroupNormShape& s, bool aligned,
                                            const GroupNormResidentDevice& dev = {});
// Each CTA a range of whole segments (groups channels-first, samples channels-last, there cut into as
// many windows of whole groups as keep each window whole 16-byte packs without pad, within 528 CTAs),
// as many of its units on chip as a CTA's shared memory holds: one launch with a CTA barrier between the
// phases (no cooperative launch, any number of CTAs). Grid 0: none. The plugin's pick where
// groupNormResidentPick says so.
GroupNormResidentPlan groupNormWholeSegmentPlan(DType dt, const GroupNormShape& s, bool aligned,
                                                const GroupNormResidentDevice& dev);
// Each group (channels-first) or sample's window of groups (channels-last: as many windows as
// groupNormWholeSegmentPlan cuts) split into `ctas` ranges (2-8), the CTAs of one thread-block cluster, as much
// of each range on chip as a CTA's shared memory holds: one launch with a cluster barrier between the phases
// (sm_90+, no cooperative launch, any number of clusters). Grid 0: none (a group not a multiple of ctas x
// 16-byte packs, pixels not a multiple of ctas, more than 528 CTAs).
GroupNormResidentPlan groupNormClusterPlan(DType dt, const GroupNormShape& s, bool aligned,
                                           const GroupNormResidentDevice& dev, int64_t ctas);
// The plan the plugin picks on a described GPU (a pure function), where each measured faster: the
// whole-segment plan channels-first where groupNormWholeSegmentsFirst and it holds each group on chip, the
// cluster plan where groupNormClusterCtas names a cluster the GPU runs and it holds each group on chip;
// channels-last (16-bit, no skip) the whole-segment plan where a CTA's window of groups is 32 KB or less and
// the grid one CTA per SM at most, else the fused plan cut into channel windows on one sample up to 5 MB
// and with windows of 120 channels or more up to 8 MB; else groupNormResidentPlan.
GroupNormResidentPlan groupNormResidentPick(DType dt, const GroupNormShape& s, bool aligned, const GroupNormResidentDevice& dev);
// How a resident plan's groups run held in registers (one pass over x, no staging): packs per thread (0: not
// in registers), elements per pack, CTAs per group (channels-first: a thread-block cluster), threads per CTA and
// (channels-last) pixels per step.
struct GroupNormInRegisters {
    int32_t packs = 0, vec = 0, cluster = 1;
    int64_t threads = 0, rows = 0;
};
// Where plan p runs so: a lean launch (lean: no bias or sum; no skip) of a fused plan with every unit on chip and
// 16-byte packs, whose groups fit at most 4 packs per thread: whole groups per CTA (channels-last: no pad, each
// pixel's group channels whole 8- or 16-byte packs), or channels-first a cluster plan (or whole groups past a
// CTA), each group in the fewest CTAs of a cluster of up to dev.maxCluster that hold it, where the grid is one
// wave at 2 CTAs per SM. A pure function of its arguments.
GroupNormInRegisters groupNormInRegisters(DType dt, const GroupNormShape& s, bool aligned, const GroupNormResidentPlan& p,
                                          bool lean, const GroupNormResidentDevice& dev);
// What the plugin runs when configured: groupNormResidentPick on this GPU, fused where the GPU can hold
// every CTA of it at once (occupancy) or its CTAs need no grid-wide barrier, else two launches.
GroupNormResidentPlan groupNormResidentConfigure(DType dt, const GroupNormShape& s, bool aligned) noexcept;
// Whether a channels-first shape runs the resident design rather than the split one (where the fused
// plan measured faster; a pure function of its arguments: the caller checks the plan is fused, and a cluster
// plan where only groupNormClusterCtas says so). clusters false: as where no cluster plan runs.
bool groupNormResidentFirst(DType dt, const GroupNormShape& s, GroupNormAct act, bool clusters = true);
// Whether a channels-first shape runs whole groups per CTA (1-8 samples, no skip, groups of 32 KB or
// less, and 16-bit groups of 64 KB or less on 3-4 samples: where a CTA each measured faster than sharing
// them across the GPU): a pure function.
bool groupNormWholeSegmentsFirst(DType dt, const GroupNormShape& s);
// The CTAs per group (a thread-block cluster) a channels-first shape runs, where the cluster plan measured
// faster than the other plans (16-bit, no skip, 2-4 samples of 40 KB groups or more, 5-8 samples of 128 KB
// or more), else 0: a pure function.
int64_t groupNormClusterCtas(DType dt, const GroupNormShape& s);

// Whether a channels-last shape has a kernel: a row of 16-byte packs (or of elements) of a pixel fits
// a CTA's threads.
bool groupNormChannelsLastOk(DType dt, int64_t channels, int64_t channelStride);

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

// The design and plan the plugin runs a shape with, chosen when configured on the current GPU (every
// caller asks this, once per shape): channels-last the resident design (groupNormResidentConfigure);
// channels-first the resident one where groupNormResidentFirst and its plan there is fused, else the
// split design (groupNormConfigure).
struct GroupNormChoice {
    GroupNormPlan plan;             // the split design's (channels-first, where resident.grid is 0)
    GroupNormResidentPlan resident; // the resident design's (grid 0: not chosen)
};
GroupNormChoice groupNormChoose(DType dt, const GroupNormShape& s, GroupNormAct act) noexcept;

// Workspace bytes for every shape with at most n * groups groups (any group size, either design):
// what getWorkspaceSize returns for the largest shape of a profile. A fused or cluster launch may fall
// back to two launches, so it is always asked for.
size_t groupNormWorkspaceSize(int64_t n, int64_t groups);
// The same for one layout (the plugin's: its format decides).
size_t groupNormWorkspaceSize(int64_t n, int64_t groups, GroupNormLayout layout);

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
    GroupNormLayout layout = GroupNormLayout::kChannelsFirst;
    int64_t channelStride = 0;    // channels-last: elements between pixels (x, skip, y, sum alike; 0: channels)
    // The resident design's plan (groupNormResidentConfigure), for channels-last (required) or to force
    // it channels-first; a grid of 0, or not a plan of this shape: its two launches.
    GroupNormResidentPlan resident = {};
};

// n * channels * spatial == 0 launches nothing. Returns the launch status (never aborts);
// cudaErrorInvalidValue for bad arguments (channels % groups, a short workspace, ...). A cluster or
// fused plan whose launch fails (another device or context than configured, an MPS share) runs as two
// launches instead. `ran`, `ranResident`: the plan that ran (tests, benchmarks; {} for the other design).
cudaError_t launchGroupNorm(DType dt, const GroupNormArgs& args, cudaStream_t stream, GroupNormPlan* ran = nullptr,
                            GroupNormResidentPlan* ranResident = nullptr);

// The floors of the one-launch designs, for the benchmark (floor.cu): x copied to y (bytes a multiple of 16,
// both 16-byte aligned) by `ctas` CTAs, each its share through shared memory, with a barrier of this kind
// between its loads and its stores (kCluster: clusters of `cluster` CTAs, sm_90+; kGrid: a cooperative launch,
// every CTA resident at once). Returns the launch status (cudaErrorInvalidValue: bad arguments, or a share past
// a CTA's shared memory).
enum class GroupNormFloor : int32_t { kNone = 0, kCta = 1, kCluster = 2, kGrid = 3 };
cudaError_t launchGroupNormFloor(GroupNormFloor barrier, const void* x, void* y, int64_t bytes, int32_t ctas,
                                 int32_t cluster, cudaStream_t stream) noexcept;

// The resident design alone (launchGroupNorm calls it for channels-last or a resident plan).
cudaError_t launchGroupNormResident(DType dt, const GroupNormArgs& args, cudaStream_t stream, GroupNormResidentPlan* ran);
size_t groupNormResidentWorkspaceSize(int64_t n, int64_t groups, GroupNormLayout layout);

} // namespace trtp
