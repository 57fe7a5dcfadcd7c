// Scratch C entry for the new GroupNorm kernel (wip: replaced by the op's binding once integrated).
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include "group_norm.h"

#define GN_API extern "C" __attribute__((visibility("default")))

namespace {
trtp::GroupNormShape shapeOf(int layout, long long n, long long c, long long spatial, long long groups, long long cstride,
                             int skip) {
    trtp::GroupNormShape s;
    s.n = n, s.channels = c, s.spatial = spatial, s.groups = groups, s.channelStride = cstride;
    s.layout = trtp::GroupNormLayout(layout), s.skip = trtp::GroupNormSkip(skip);
    return s;
}
void put(const trtp::GroupNormPlan& p, long long* out) {
    if (out) out[0] = p.grid, out[1] = p.per, out[2] = p.resident, out[3] = p.fused;
}

__global__ void barrierKernel() { cooperative_groups::this_grid().sync(); }
__global__ void emptyKernel() {}
} // namespace

GN_API unsigned long long gn2_workspace(long long n, long long groups) { return trtp::groupNormWorkspaceSize(n, groups); }

// The plan the plugin would configure (aligned pointers), or the two-launch plan, into plan[4] = grid,
// per, resident, fused.
GN_API int gn2_configure(int dtype, int layout, long long n, long long c, long long spatial, long long groups,
                         long long cstride, int skip, int two_launches, long long* plan) {
    const auto s = shapeOf(layout, n, c, spatial, groups, cstride, skip);
    put(two_launches ? trtp::groupNormPlan(trtp::DType(dtype), s, true) : trtp::groupNormConfigure(trtp::DType(dtype), s, true), plan);
    return 0;
}

// plan: nullptr: the configured one; else grid, per, resident, fused to force. ran: the plan that ran.
GN_API int gn2_run(int dtype, int layout, long long n, long long c, long long spatial, long long groups, long long cstride,
                   int skip_mode, const void* x, const void* skip, const float* bias, const float* gamma, const float* beta,
                   void* y, void* sum, void* ws, unsigned long long ws_size, float eps, int act, const long long* plan,
                   long long* ran, void* stream) {
    trtp::GroupNormArgs a;
    a.shape = shapeOf(layout, n, c, spatial, groups, cstride, skip_mode);
    a.x = x, a.skip = skip, a.bias = bias, a.gamma = gamma, a.beta = beta, a.y = y, a.sum = sum;
    a.workspace = ws, a.workspaceSize = ws_size, a.epsilon = eps, a.act = trtp::GroupNormAct(act);
    trtp::groupNormDevice(); // what a configure does first: the kernels' shared memory limit on this GPU
    if (plan) {
        a.plan.grid = int(plan[0]), a.plan.per = plan[1], a.plan.resident = plan[2], a.plan.fused = plan[3] != 0;
    } else {
        a.plan = trtp::groupNormConfigure(trtp::DType(dtype), a.shape, true);
    }
    trtp::GroupNormPlan done;
    const cudaError_t e = trtp::launchGroupNorm(trtp::DType(dtype), a, static_cast<cudaStream_t>(stream), &done);
    put(done, ran);
    return int(e);
}

// The floor of a fused launch: `grid` CTAs of 512 threads that meet at one grid-wide barrier (cooperative),
// or an empty kernel (barrier 0).
GN_API int gn2_probe(int grid, int barrier, void* stream) {
    cudaLaunchAttribute attr = {};
    attr.id = cudaLaunchAttributeCooperative;
    attr.val.cooperative = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(unsigned(grid));
    cfg.blockDim = dim3(512);
    cfg.stream = static_cast<cudaStream_t>(stream);
    cfg.attrs = &attr;
    cfg.numAttrs = barrier ? 1 : 0;
    return int(barrier ? cudaLaunchKernelEx(&cfg, barrierKernel) : cudaLaunchKernelEx(&cfg, emptyKernel));
}
