// Which GPUs this build can run on: the plugins refuse a GPU without a kernel
// image (or below the oldest architecture the kernels support) with a message
// naming the GPU and what it lacks, instead of failing at enqueue.
#pragma once
#include <cuda_runtime_api.h>

#include <string>

namespace trtp {

constexpr int kMinComputeCapability = 75; // sm_75 (Turing) and newer

// Empty when a GPU of compute capability major.minor named `name` is
// supported; `hasImage`: the build holds code (SASS or PTX) the GPU can run.
std::string gpuProblem(const char* name, int major, int minor, bool hasImage);

// The problem with the current device (checked once per device), empty when
// it is supported or when there is no CUDA device to ask (CPU-only tools).
std::string currentGpuProblem() noexcept;

// The CUDA architectures compiled in, e.g. "75-real,80-real,...,120-virtual".
const char* builtArchitectures() noexcept;

// The message of a CUDA error code: the kernel library owns the CUDA runtime, the plugin libraries
// call none of its functions.
const char* cudaErrorText(cudaError_t e) noexcept;

} // namespace trtp
