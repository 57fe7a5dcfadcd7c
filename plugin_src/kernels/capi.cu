// C entry points for ctypes (no TensorRT): each returns the cudaError_t value (0 = success).
#include <cuda_runtime.h>

#include "bias_activation.h"
#include "skip_norm.h"

#define TRTP_API extern "C" __attribute__((visibility("default")))

namespace {
__global__ void emptyKernel() {}
} // namespace

TRTP_API int trtp_bias_activation(int dtype, const void* x, const float* bias, void* y, long long rows,
                                  long long hidden, int act, void* stream) {
    return int(trtp::launchBiasActivation(trtp::DType(dtype), x, bias, y, rows, hidden, trtp::Activation(act),
                                          static_cast<cudaStream_t>(stream)));
}

TRTP_API int trtp_skip_norm(int dtype, const void* x, const void* skip, const float* bias, const float* gamma,
                            const float* beta, void* y, void* sum, long long rows, long long hidden, float epsilon,
                            int norm, long long skip_rows, int variant, void* stream) {
    trtp::SkipNormArgs a;
    a.x = x, a.skip = skip, a.bias = bias, a.gamma = gamma, a.beta = beta, a.y = y, a.sum = sum;
    a.rows = rows, a.hidden = hidden, a.epsilon = epsilon, a.norm = trtp::Norm(norm);
    a.skipRows = skip_rows, a.variant = variant;
    return int(trtp::launchSkipNorm(trtp::DType(dtype), a, static_cast<cudaStream_t>(stream)));
}

// The variant a plugin picks for (dtype, hidden); -1 for hidden < 1.
TRTP_API int trtp_skip_norm_variant(int dtype, long long hidden) {
    return trtp::skipNormVariant(trtp::DType(dtype), hidden);
}

TRTP_API int trtp_skip_norm_candidates(int dtype, long long hidden, int* out, int cap) {
    return trtp::skipNormCandidates(trtp::DType(dtype), hidden, out, cap);
}

TRTP_API const char* trtp_error_string(int code) { return cudaGetErrorString(cudaError_t(code)); }

// One launch of an empty kernel: the latency floor the benchmark compares small launches with.
TRTP_API int trtp_empty_launch(void* stream) {
    emptyKernel<<<1, 32, 0, static_cast<cudaStream_t>(stream)>>>();
    return int(cudaGetLastError());
}
