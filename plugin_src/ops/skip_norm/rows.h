// SkipNorm's row kernels per I/O type T (float, __half, __nv_bfloat16), each compiled in its own
// translation unit (rows_<type>.cu from rows.cuh).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "skip_norm.h"

namespace trtp {

// Blocks of variant v's kernel (a bias or not, 16-bit weights or not) resident on the current GPU at once
// (-1: v has no such kernel in this build; 0: the query failed).
template <class T> int32_t rowKernelBlocks(Norm norm, int32_t v, bool skip, bool bias, bool iow, int64_t hidden);
// Launches variant v (feasible for args, its packs aligned) on the rows of args; iow: 16-bit weights.
template <class T> cudaError_t launchRowKernel(const SkipNormArgs& args, int32_t v, bool iow, cudaStream_t stream);

#define TRTP_SKIP_NORM_ROWS(T)                                                                              \
    template int32_t rowKernelBlocks<T>(Norm, int32_t, bool, bool, bool, int64_t);                          \
    template cudaError_t launchRowKernel<T>(const SkipNormArgs&, int32_t, bool, cudaStream_t);
#define TRTP_SKIP_NORM_ROWS_EXTERN(T)                                                                       \
    extern template int32_t rowKernelBlocks<T>(Norm, int32_t, bool, bool, bool, int64_t);                   \
    extern template cudaError_t launchRowKernel<T>(const SkipNormArgs&, int32_t, bool, cudaStream_t);
TRTP_SKIP_NORM_ROWS_EXTERN(float)
TRTP_SKIP_NORM_ROWS_EXTERN(__half)
TRTP_SKIP_NORM_ROWS_EXTERN(__nv_bfloat16)

} // namespace trtp
