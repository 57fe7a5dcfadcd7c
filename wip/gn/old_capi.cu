// Scratch: the current GroupNorm kernel (plugin_src/kernels/group_norm.cu) behind a small C entry, to
// time it beside the new one in one process. The plugin's configured plan.
#include <cuda_runtime.h>

#include "../../plugin_src/kernels/group_norm.h"

extern "C" __attribute__((visibility("default"))) int gn_old_run(int dtype, const void* x, const void* skip, int skip_mode,
                                                                  const float* bias, const float* gamma, const float* beta,
                                                                  void* y, void* sum, void* ws, unsigned long long ws_size,
                                                                  long long n, long long c, long long spatial,
                                                                  long long groups, float eps, int act, void* stream) {
    trtp::GroupNormArgs a;
    a.x = x, a.skip = skip, a.bias = bias, a.gamma = gamma, a.beta = beta, a.y = y, a.sum = sum;
    a.workspace = ws, a.workspaceSize = ws_size;
    a.n = n, a.channels = c, a.spatial = spatial, a.groups = groups, a.epsilon = eps;
    a.skipMode = trtp::GroupNormSkip(skip_mode), a.act = trtp::GroupNormAct(act);
    a.plan = trtp::groupNormConfigure(trtp::DType(dtype), n, groups, c / groups * spatial, a.skipMode);
    return int(trtp::launchGroupNorm(trtp::DType(dtype), a, static_cast<cudaStream_t>(stream)));
}

extern "C" __attribute__((visibility("default"))) unsigned long long gn_old_workspace(long long n, long long groups) {
    return trtp::groupNormWorkspaceSize(n, groups);
}
