#include "gpu_support.h"

#include <cuda_runtime_api.h>

#include <map>
#include <mutex>

#ifndef TRTPLUGINS_ARCHS
#define TRTPLUGINS_ARCHS "unknown"
#endif

namespace trtp {
namespace {
// Compiled for every architecture of the build, like the kernels: whether it
// has an image for a device tells whether the kernels do.
__global__ void probe() {}
} // namespace

const char* builtArchitectures() noexcept { return TRTPLUGINS_ARCHS; }

const char* cudaErrorText(cudaError_t e) noexcept { return cudaGetErrorString(e); }

std::string gpuProblem(const char* name, int major, int minor, bool hasImage) {
    const int cc = major * 10 + minor;
    std::string gpu = std::string("GPU '") + (name ? name : "?") + "' (sm_" + std::to_string(cc) + ")";
    if (cc < kMinComputeCapability)
        return gpu + " is not supported: the kernels need compute capability >= " + std::to_string(kMinComputeCapability / 10) +
               "." + std::to_string(kMinComputeCapability % 10) + " (Turing or newer)";
    if (!hasImage)
        return gpu + " has no kernel image in this build (architectures: " + builtArchitectures() +
               "): rebuild with TRTPLUGINS_CUDA_ARCHS including " + std::to_string(cc) + "-real";
    return {};
}

std::string currentGpuProblem() noexcept {
    try {
        int dev = -1;
        if (cudaGetDevice(&dev) != cudaSuccess) {
            cudaGetLastError();
            return {};
        }
        static std::mutex m;
        static std::map<int, std::string> known;
        std::lock_guard<std::mutex> lock(m);
        auto it = known.find(dev);
        if (it != known.end()) return it->second;
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
            cudaGetLastError();
            return {};
        }
        cudaFuncAttributes attr{};
        const bool hasImage = cudaFuncGetAttributes(&attr, probe) == cudaSuccess;
        if (!hasImage) cudaGetLastError();
        return known[dev] = gpuProblem(prop.name, prop.major, prop.minor, hasImage);
    } catch (...) {
        return {};
    }
}

} // namespace trtp
