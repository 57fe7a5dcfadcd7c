// FP32 weights (bias, gamma, beta) on the device: one allocation per plugin,
// shared by its clones, freed when the last owner lets go.
#pragma once
#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

namespace trtp {

class DeviceWeights {
public:
    // Uploads the arrays (empty ones become nullptr); throws PluginError on CUDA failure.
    static std::shared_ptr<DeviceWeights> upload(const std::vector<const std::vector<float>*>& arrays);
    ~DeviceWeights();
    DeviceWeights(const DeviceWeights&) = delete;
    DeviceWeights& operator=(const DeviceWeights&) = delete;

    const float* at(size_t i) const noexcept { return i < mPtrs.size() ? mPtrs[i] : nullptr; }

private:
    DeviceWeights() = default;
    float* mBase = nullptr;
    std::vector<const float*> mPtrs;
};

} // namespace trtp
