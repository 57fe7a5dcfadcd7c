// The bare kernels' own entry points (device pointers in, no op fields): the launches the tests
// compare bit for bit and the benchmark times, with what only they force (a SkipNorm variant, a
// GroupNorm plan) and what they ask (variants, plans, the device, workspace sizes). Each returns the
// cudaError_t value (0 = success). Any op by its fields: capi/run.h.
#pragma once
#include <cstddef>

#ifndef TRTP_API
#define TRTP_API extern "C" __attribute__((visibility("default")))
#endif

TRTP_API int trtp_bias_activation(int dtype, const void* x, const float* bias, void* y, long long rows, long long hidden,
                                  int act, void* stream);

// x2 nullptr: x holds both operands as the halves of its last dim (rows x 2 width).
TRTP_API int trtp_gated_activation(int dtype, const void* x, const void* x2, const float* gate_bias,
                                   const float* linear_bias, void* y, long long rows, long long width, int act, int gate,
                                   void* stream);

TRTP_API int trtp_skip_norm(int dtype, const void* x, const void* skip, const float* bias, const float* gamma,
                            const float* beta, void* y, void* sum, long long rows, long long hidden, float epsilon,
                            int norm, long long skip_rows, int variant, const void* gamma_io, const void* beta_io,
                            void* stream);

// The variant a plugin's launch of `rows` rows runs for (dtype, norm, skip input, sum output, hidden); rows < 0:
// a large launch; -1 for hidden < 1; aot 0: among the CUDA kernels alone.
TRTP_API int trtp_skip_norm_variant(int dtype, int norm, int skip, int sum, long long hidden, int io_weights,
                                    long long rows, int aot);

TRTP_API long long trtp_skip_norm_small_elems();

// The rows of a skip of dims s beside x of dims x (skipNormSkipRows): 0 where it has x's rows, > 0 where its rows
// repeat over x's leading dims, -1 where neither.
TRTP_API long long trtp_skip_norm_skip_rows(const long long* x, int nx, const long long* s, int ns);

TRTP_API int trtp_skip_norm_candidates(int dtype, int norm, int skip, int sum, long long hidden, int* out, int cap);

// plan_chunks / plan_chunk_len / plan_cluster: a plan to force (GroupNormPlan; chunks 0: the plugin's,
// groupNormConfigure on the current GPU). ran (3 values, may be null): the plan that ran.
TRTP_API int trtp_group_norm(int dtype, const void* x, const void* skip, int skip_mode, const float* bias,
                             const float* gamma, const float* beta, void* y, void* sum, void* workspace,
                             size_t workspace_size, long long n, long long channels, long long spatial, long long groups,
                             float epsilon, int act, long long plan_chunks, long long plan_chunk_len, int plan_cluster,
                             long long* ran, void* stream);

// groupNormPlan for a GPU described by `device` (sms, smem_per_sm, smem_per_block, max_cluster, as
// trtp_group_norm_device gives them; null: no clusters, the two launches), without a CUDA call:
// chunks per group, elements per chunk, cluster (0 or 1).
TRTP_API void trtp_group_norm_plan(int dtype, long long n, long long groups, long long group_size, int skip_mode,
                                   const int* device, long long* chunks, long long* chunk_len, int* cluster);

// The plan a plugin picks when configured on the current GPU (groupNormConfigure).
TRTP_API void trtp_group_norm_configure(int dtype, long long n, long long groups, long long group_size, int skip_mode,
                                        long long* chunks, long long* chunk_len, int* cluster);

// What the cluster path knows about the current GPU (GroupNormDevice): max_cluster 0 = no clusters.
TRTP_API void trtp_group_norm_device(int* sms, int* smem_per_sm, int* smem_per_block, int* max_cluster);

// Workspace bytes for batch n (any smaller shape): the plugin's for a layout (0 channels-first, 1
// channels-last), or (-1) enough for either.
TRTP_API size_t trtp_group_norm_workspace(long long n, long long groups, int layout);

// GroupNorm's resident design, either layout (0 channels-first, 1 channels-last with channel_stride
// elements between pixels; 0: channels). plan (grid, per, resident, fused, narrow, cluster): one to force, or
// null: the plugin's (groupNormResidentConfigure). ran (6 values, may be null): the plan that ran.
TRTP_API int trtp_group_norm_resident(int dtype, int layout, long long channel_stride, const void* x, const void* skip,
                                      int skip_mode, const float* bias, const float* gamma, const float* beta, void* y,
                                      void* sum, void* workspace, size_t workspace_size, long long n, long long channels,
                                      long long spatial, long long groups, float epsilon, int act, const long long* plan,
                                      long long* ran, void* stream);

// The resident plan (grid, per, resident, fused, narrow, cluster) into plan[6] for `ctas_per_sm` fused CTAs per
// SM: on the current GPU (configured 1; with 1 CTA per SM, what the plugin picks), or (0) on a GPU of
// `sms` multiprocessors with `smem_per_block` bytes of opt-in shared memory and clusters of up to
// `max_cluster` CTAs (sms 0: the two launches, the same everywhere); configured 2: what the plugin picks on
// that GPU (groupNormResidentPick; with 1 CTA per SM and windows 1). whole_segments 1:
// groupNormWholeSegmentPlan on that GPU instead (channels-last: grid = ranges x channel windows). windows
// (channels-last fused plans): channel windows of whole groups per range, as GroupNormResidentDevice::windows
// (1: the plugin's; 0: as many as whole packs allow; -1: none, whatever the plugin picks). cluster 2-8:
// groupNormClusterPlan with that many CTAs per group (channels-last: per sample's window) instead.
TRTP_API void trtp_group_norm_resident_plan(int dtype, int layout, long long channel_stride, long long n, long long channels,
                                            long long spatial, long long groups, int skip_mode, int configured,
                                            long long sms, long long smem_per_block, long long ctas_per_sm,
                                            long long max_cluster, long long windows, int whole_segments,
                                            long long cluster, long long* plan);

// How resident plan plan[6] of a shape (no skip) runs held in registers on a GPU of `sms` multiprocessors and
// clusters of up to `max_cluster` CTAs (groupNormInRegisters; lean 0: a bias or sum output), into out[5]: packs
// per thread (0: not in registers), elements per pack, CTAs per group, threads per CTA, pixels per step.
TRTP_API void trtp_group_norm_in_registers(int dtype, int layout, long long channel_stride, long long n, long long channels,
                                           long long spatial, long long groups, const long long* plan, int lean,
                                           long long sms, long long max_cluster, long long* out);

// Whether the plugin runs a channels-first shape with the resident design rather than the split one
// (groupNormResidentFirst; the plugin also needs its plan on the GPU to be fused, and a cluster plan where only
// the cluster rule says so): 1 or 0. clusters 0: as where no cluster plan runs.
TRTP_API int trtp_group_norm_resident_first(int dtype, long long n, long long channels, long long spatial, long long groups,
                                           int skip_mode, int act, int clusters);

// What the plugin runs a shape with on the current GPU (groupNormChoose), into choice[9]: the resident
// plan (grid, per, resident, fused, narrow, cluster; grid 0: not chosen), then the split one (chunks,
// chunk_len, cluster).
TRTP_API void trtp_group_norm_choose(int dtype, int layout, long long channel_stride, long long n, long long channels,
                                     long long spatial, long long groups, int skip_mode, int act, long long* choice);

// GroupNorm as the plugin runs it: with choice[9] from trtp_group_norm_choose for this shape (null: chosen
// here), the resident design where its grid is above 0, else the split one. Arguments as above.
TRTP_API int trtp_group_norm_chosen(int dtype, int layout, long long channel_stride, const void* x, const void* skip,
                                    int skip_mode, const float* bias, const float* gamma, const float* beta, void* y,
                                    void* sum, void* workspace, size_t workspace_size, long long n, long long channels,
                                    long long spatial, long long groups, float epsilon, int act, const long long* choice,
                                    void* stream);

// GroupNorm's one-launch floors (launchGroupNormFloor): bytes of x copied to y by ctas CTAs through shared
// memory, barrier 0 none, 1 the CTA's, 2 the cluster's (of `cluster` CTAs), 3 the grid's. Returns the CUDA status.
TRTP_API int trtp_group_norm_floor(int barrier, const void* x, void* y, long long bytes, long long ctas,
                                   long long cluster, void* stream);

// Whether a channels-last shape has a kernel (groupNormChannelsLastOk): 1 or 0.
TRTP_API int trtp_group_norm_channels_last_ok(int dtype, long long channels, long long channel_stride);

TRTP_API const char* trtp_error_string(int code);

// One launch of an empty kernel: the latency floor the benchmark compares small launches with.
TRTP_API int trtp_empty_launch(void* stream);
