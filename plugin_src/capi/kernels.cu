// The bare kernels' own entry points (kernels.h).
#include "kernels.h"

#include <cuda_runtime.h>

#include "../ops/bias_activation/bias_activation.h"
#include "../ops/gated_activation/gated_activation.h"
#include "../ops/group_norm/group_norm.h"
#include "../ops/skip_norm/skip_norm.h"


namespace {
__global__ void emptyKernel() {}
} // namespace

TRTP_API int trtp_bias_activation(int dtype, const void* x, const float* bias, void* y, long long rows,
                                  long long hidden, int act, void* stream) {
    return int(trtp::launchBiasActivation(trtp::DType(dtype), x, bias, y, rows, hidden, trtp::Activation(act),
                                          static_cast<cudaStream_t>(stream)));
}

TRTP_API int trtp_gated_activation(int dtype, const void* x, const void* x2, const float* gate_bias,
                                   const float* linear_bias, void* y, long long rows, long long width, int act,
                                   int gate, void* stream) {
    trtp::GatedActivationArgs a;
    a.x = x, a.x2 = x2, a.gateBias = gate_bias, a.linearBias = linear_bias, a.y = y;
    a.rows = rows, a.width = width, a.act = trtp::Activation(act), a.gate = trtp::GateOperand(gate);
    return int(trtp::launchGatedActivation(trtp::DType(dtype), a, static_cast<cudaStream_t>(stream)));
}

TRTP_API int trtp_skip_norm(int dtype, const void* x, const void* skip, const float* bias, const float* gamma,
                            const float* beta, void* y, void* sum, long long rows, long long hidden, float epsilon,
                            int norm, long long skip_rows, int variant, const void* gamma_io, const void* beta_io,
                            void* stream) {
    trtp::SkipNormArgs a;
    a.x = x, a.skip = skip, a.bias = bias, a.gamma = gamma, a.beta = beta, a.y = y, a.sum = sum;
    a.gammaIo = gamma_io, a.betaIo = beta_io;
    a.rows = rows, a.hidden = hidden, a.epsilon = epsilon, a.norm = trtp::Norm(norm);
    a.skipRows = skip_rows, a.variant = a.smallVariant = variant; // a variant >= 0 is forced for any rows
    return int(trtp::launchSkipNorm(trtp::DType(dtype), a, static_cast<cudaStream_t>(stream)));
}

TRTP_API int trtp_skip_norm_variant(int dtype, int norm, int skip, int sum, long long hidden, int io_weights,
                                    long long rows, int aot) {
    const bool small = rows >= 0 && hidden >= 1 && trtp::skipNormSmall(rows, hidden);
    const auto dt = trtp::DType(dtype);
    const auto nm = trtp::Norm(norm);
    return aot ? trtp::skipNormVariant(dt, nm, skip != 0, sum != 0, hidden, io_weights != 0, small)
               : trtp::skipNormCudaVariant(dt, nm, skip != 0, hidden, io_weights != 0, small);
}

TRTP_API long long trtp_skip_norm_small_elems() { return trtp::kSkipNormSmallElems; }

TRTP_API long long trtp_skip_norm_skip_rows(const long long* x, int nx, const long long* s, int ns) {
    return (nx && !x) || (ns && !s) ? -1 : trtp::skipNormSkipRows(x, nx, s, ns);
}

TRTP_API int trtp_skip_norm_candidates(int dtype, int norm, int skip, int sum, long long hidden, int* out, int cap) {
    return trtp::skipNormCandidates(trtp::DType(dtype), trtp::Norm(norm), skip != 0, sum != 0, hidden, out, cap);
}

namespace {
trtp::GroupNormArgs groupNormArgs(const void* x, const void* skip, int skip_mode, const float* bias, const float* gamma,
                                  const float* beta, void* y, void* sum, void* workspace, size_t workspace_size,
                                  long long n, long long channels, long long spatial, long long groups, float epsilon,
                                  int act) {
    trtp::GroupNormArgs a;
    a.x = x, a.skip = skip, a.bias = bias, a.gamma = gamma, a.beta = beta, a.y = y, a.sum = sum;
    a.workspace = workspace, a.workspaceSize = workspace_size;
    a.n = n, a.channels = channels, a.spatial = spatial, a.groups = groups, a.epsilon = epsilon;
    a.skipMode = trtp::GroupNormSkip(skip_mode), a.act = trtp::GroupNormAct(act);
    return a;
}
} // namespace

TRTP_API int trtp_group_norm(int dtype, const void* x, const void* skip, int skip_mode, const float* bias,
                             const float* gamma, const float* beta, void* y, void* sum, void* workspace,
                             size_t workspace_size, long long n, long long channels, long long spatial, long long groups,
                             float epsilon, int act, long long plan_chunks, long long plan_chunk_len, int plan_cluster,
                             long long* ran, void* stream) {
    trtp::GroupNormArgs a = groupNormArgs(x, skip, skip_mode, bias, gamma, beta, y, sum, workspace, workspace_size, n,
                                          channels, spatial, groups, epsilon, act);
    a.plan.chunks = plan_chunks, a.plan.chunkLen = plan_chunk_len, a.plan.cluster = plan_cluster != 0;
    if (plan_chunks == 0 && groups > 0 && channels % groups == 0)
        a.plan = trtp::groupNormConfigure(trtp::DType(dtype), n, groups, channels / groups * spatial, a.skipMode);
    else if (a.plan.cluster)
        trtp::groupNormDevice(); // what a configure does first: the cluster kernels' attributes on this GPU
    trtp::GroupNormPlan done;
    const cudaError_t e = trtp::launchGroupNorm(trtp::DType(dtype), a, static_cast<cudaStream_t>(stream), &done);
    if (ran) ran[0] = done.chunks, ran[1] = done.chunkLen, ran[2] = done.cluster;
    return int(e);
}

TRTP_API void trtp_group_norm_plan(int dtype, long long n, long long groups, long long group_size, int skip_mode,
                                   const int* device, long long* chunks, long long* chunk_len, int* cluster) {
    trtp::GroupNormDevice d;
    if (device) d.sms = device[0], d.smemPerSm = device[1], d.smemPerBlock = device[2], d.maxCluster = device[3];
    const trtp::GroupNormPlan p =
        trtp::groupNormPlan(trtp::DType(dtype), n, groups, group_size, trtp::GroupNormSkip(skip_mode), d);
    *chunks = p.chunks, *chunk_len = p.chunkLen, *cluster = p.cluster;
}

TRTP_API void trtp_group_norm_configure(int dtype, long long n, long long groups, long long group_size, int skip_mode,
                                        long long* chunks, long long* chunk_len, int* cluster) {
    const trtp::GroupNormPlan p =
        trtp::groupNormConfigure(trtp::DType(dtype), n, groups, group_size, trtp::GroupNormSkip(skip_mode));
    *chunks = p.chunks, *chunk_len = p.chunkLen, *cluster = p.cluster;
}

TRTP_API void trtp_group_norm_device(int* sms, int* smem_per_sm, int* smem_per_block, int* max_cluster) {
    const trtp::GroupNormDevice d = trtp::groupNormDevice();
    *sms = d.sms, *smem_per_sm = d.smemPerSm, *smem_per_block = d.smemPerBlock, *max_cluster = d.maxCluster;
}

TRTP_API size_t trtp_group_norm_workspace(long long n, long long groups, int layout) {
    return layout < 0 ? trtp::groupNormWorkspaceSize(n, groups) : trtp::groupNormWorkspaceSize(n, groups, trtp::GroupNormLayout(layout));
}

namespace {
trtp::GroupNormShape residentShape(int layout, long long channel_stride, long long n, long long channels, long long spatial,
                                   long long groups, int skip_mode) {
    trtp::GroupNormShape s;
    s.n = n, s.channels = channels, s.spatial = spatial, s.groups = groups;
    s.layout = trtp::GroupNormLayout(layout), s.channelStride = channel_stride, s.skip = trtp::GroupNormSkip(skip_mode);
    return s;
}
void putPlan(const trtp::GroupNormResidentPlan& p, long long* out) {
    if (!out) return;
    out[0] = p.grid, out[1] = p.per, out[2] = p.resident, out[3] = p.fused, out[4] = p.narrow, out[5] = p.cluster;
}
trtp::GroupNormResidentPlan getPlan(const long long* v) {
    trtp::GroupNormResidentPlan p;
    p.grid = int32_t(v[0]), p.per = v[1], p.resident = v[2], p.fused = v[3] != 0, p.narrow = v[4] != 0;
    p.cluster = int32_t(v[5]);
    return p;
}
} // namespace

TRTP_API int trtp_group_norm_resident(int dtype, int layout, long long channel_stride, const void* x, const void* skip,
                                      int skip_mode, const float* bias, const float* gamma, const float* beta, void* y,
                                      void* sum, void* workspace, size_t workspace_size, long long n, long long channels,
                                      long long spatial, long long groups, float epsilon, int act, const long long* plan,
                                      long long* ran, void* stream) {
    trtp::GroupNormArgs a = groupNormArgs(x, skip, skip_mode, bias, gamma, beta, y, sum, workspace, workspace_size, n,
                                          channels, spatial, groups, epsilon, act);
    a.layout = trtp::GroupNormLayout(layout), a.channelStride = channel_stride;
    trtp::groupNormResidentDevice(); // what a configure does first: the kernels' shared memory limit on this GPU
    if (plan) a.resident = getPlan(plan);
    else a.resident = trtp::groupNormResidentConfigure(trtp::DType(dtype), residentShape(layout, channel_stride, n, channels, spatial, groups, skip_mode), true);
    trtp::GroupNormResidentPlan done;
    const cudaError_t e = trtp::launchGroupNormResident(trtp::DType(dtype), a, static_cast<cudaStream_t>(stream), &done);
    putPlan(done, ran);
    return int(e);
}

TRTP_API void trtp_group_norm_resident_plan(int dtype, int layout, long long channel_stride, long long n, long long channels,
                                            long long spatial, long long groups, int skip_mode, int configured,
                                            long long sms, long long smem_per_block, long long ctas_per_sm,
                                            long long max_cluster, long long windows, int whole_segments,
                                            long long cluster, long long* plan) {
    const auto s = residentShape(layout, channel_stride, n, channels, spatial, groups, skip_mode);
    const auto dt = trtp::DType(dtype);
    trtp::GroupNormResidentDevice dev; // this GPU (configured 1), or described (sms 0: two launches)
    if (configured == 1) dev = trtp::groupNormResidentDevice();
    else dev.sms = int32_t(sms), dev.smemPerBlock = int32_t(smem_per_block), dev.maxCluster = int32_t(max_cluster);
    dev.ctasPerSm = int32_t(ctas_per_sm), dev.windows = int32_t(windows);
    if (cluster) putPlan(trtp::groupNormClusterPlan(dt, s, true, dev, cluster), plan);
    else if (whole_segments) putPlan(trtp::groupNormWholeSegmentPlan(dt, s, true, dev), plan);
    else if (ctas_per_sm != 1 || windows != 1 || configured == 0) putPlan(trtp::groupNormResidentPlan(dt, s, true, dev), plan);
    else putPlan(configured == 1 ? trtp::groupNormResidentConfigure(dt, s, true) // the plugin's, on this GPU
                                 : trtp::groupNormResidentPick(dt, s, true, dev), plan); // on the described one
}

TRTP_API void trtp_group_norm_in_registers(int dtype, int layout, long long channel_stride, long long n, long long channels,
                                           long long spatial, long long groups, const long long* plan, int lean,
                                           long long sms, long long max_cluster, long long* out) {
    const auto s = residentShape(layout, channel_stride, n, channels, spatial, groups, 0);
    trtp::GroupNormResidentDevice dev;
    dev.sms = int32_t(sms), dev.maxCluster = int32_t(max_cluster);
    const trtp::GroupNormInRegisters k = trtp::groupNormInRegisters(trtp::DType(dtype), s, true, getPlan(plan), lean != 0, dev);
    out[0] = k.packs, out[1] = k.vec, out[2] = k.cluster, out[3] = k.threads, out[4] = k.rows;
}

TRTP_API int trtp_group_norm_resident_first(int dtype, long long n, long long channels, long long spatial, long long groups,
                                           int skip_mode, int act, int clusters) {
    const auto s = residentShape(int(trtp::GroupNormLayout::kChannelsFirst), 0, n, channels, spatial, groups, skip_mode);
    return trtp::groupNormResidentFirst(trtp::DType(dtype), s, trtp::GroupNormAct(act), clusters != 0) ? 1 : 0;
}

TRTP_API void trtp_group_norm_choose(int dtype, int layout, long long channel_stride, long long n, long long channels,
                                     long long spatial, long long groups, int skip_mode, int act, long long* choice) {
    const auto s = residentShape(layout, channel_stride, n, channels, spatial, groups, skip_mode);
    const trtp::GroupNormChoice c = trtp::groupNormChoose(trtp::DType(dtype), s, trtp::GroupNormAct(act));
    putPlan(c.resident, choice);
    choice[6] = c.plan.chunks, choice[7] = c.plan.chunkLen, choice[8] = c.plan.cluster;
}

TRTP_API int trtp_group_norm_chosen(int dtype, int layout, long long channel_stride, const void* x, const void* skip,
                                    int skip_mode, const float* bias, const float* gamma, const float* beta, void* y,
                                    void* sum, void* workspace, size_t workspace_size, long long n, long long channels,
                                    long long spatial, long long groups, float epsilon, int act, const long long* choice,
                                    void* stream) {
    long long here[9];
    if (!choice) {
        trtp_group_norm_choose(dtype, layout, channel_stride, n, channels, spatial, groups, skip_mode, act, here);
        choice = here;
    }
    trtp::GroupNormArgs a = groupNormArgs(x, skip, skip_mode, bias, gamma, beta, y, sum, workspace, workspace_size, n,
                                          channels, spatial, groups, epsilon, act);
    a.layout = trtp::GroupNormLayout(layout), a.channelStride = channel_stride;
    a.resident = getPlan(choice);
    a.plan.chunks = choice[6], a.plan.chunkLen = choice[7], a.plan.cluster = choice[8] != 0;
    // what a configure does first on this GPU: the kernels' attributes (shared memory, cluster sizes)
    if (a.resident.grid > 0 || a.layout == trtp::GroupNormLayout::kChannelsLast) trtp::groupNormResidentDevice();
    else if (a.plan.cluster) trtp::groupNormDevice();
    return int(trtp::launchGroupNorm(trtp::DType(dtype), a, static_cast<cudaStream_t>(stream)));
}

TRTP_API int trtp_group_norm_floor(int barrier, const void* x, void* y, long long bytes, long long ctas,
                                   long long cluster, void* stream) {
    // the counts as int32 here; an unknown barrier and every other argument: launchGroupNormFloor
    if (ctas > INT32_MAX || cluster < 0 || cluster > INT32_MAX) return int(cudaErrorInvalidValue);
    return int(trtp::launchGroupNormFloor(trtp::GroupNormFloor(barrier), x, y, bytes, int32_t(ctas), int32_t(cluster),
                                          static_cast<cudaStream_t>(stream)));
}

TRTP_API int trtp_group_norm_channels_last_ok(int dtype, long long channels, long long channel_stride) {
    return trtp::groupNormChannelsLastOk(trtp::DType(dtype), channels, channel_stride) ? 1 : 0;
}

TRTP_API const char* trtp_error_string(int code) { return cudaGetErrorString(cudaError_t(code)); }

TRTP_API int trtp_empty_launch(void* stream) {
    emptyKernel<<<1, 32, 0, static_cast<cudaStream_t>(stream)>>>();
    return int(cudaGetLastError());
}
