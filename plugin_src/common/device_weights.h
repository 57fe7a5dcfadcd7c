// FP32 weights (bias, gamma, beta) on the device. Each plugin object (every
// clone, every execution context) owns its own copy, uploaded outside enqueue
// (initialize / configure / clone time) in the CUDA context current then, and
// freed in that same context. Enqueue only reads pointers: no allocation and
// no synchronous copy can happen on its path (CUDA-graph capture safe).
#pragma once
#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <vector>

namespace trtp {

using HostWeights = std::vector<const std::vector<float>*>;

class DeviceWeights {
public:
    // Uploads the arrays (empty ones become nullptr) in the current context;
    // throws PluginError on CUDA failure.
    static std::shared_ptr<const DeviceWeights> upload(const HostWeights& arrays);
    ~DeviceWeights(); // frees in the context (device) that allocated
    DeviceWeights(const DeviceWeights&) = delete;
    DeviceWeights& operator=(const DeviceWeights&) = delete;

    const float* at(size_t i) const noexcept { return i < mPtrs.size() ? mPtrs[i] : nullptr; }
    int device() const noexcept { return mDevice; }
    void* context() const noexcept { return mContext; }
    // Were they uploaded in the current CUDA context?
    bool current() const noexcept;

private:
    DeviceWeights() = default;
    float* mBase = nullptr;
    int mDevice = -1;
    void* mContext = nullptr; // CUcontext that allocated mBase
    std::vector<const float*> mPtrs;
};

// The weights one plugin object owns; thread-safe. Copies start empty: a
// clone uploads its own (PluginBase::clone does it when the source was ready).
class WeightsSlot {
public:
    WeightsSlot() = default;
    WeightsSlot(const WeightsSlot&) noexcept {}
    WeightsSlot& operator=(const WeightsSlot&) = delete;

    // Uploads in the current context unless already there; throws when they
    // live in another context (one plugin object serves one device).
    void ensure(const HostWeights& arrays);
    void reset() noexcept;
    bool ready() const noexcept;
    // The weights for a launch in the current context; throws (with the reason)
    // when there are none here. Never allocates or copies.
    std::shared_ptr<const DeviceWeights> forLaunch() const;

private:
    mutable std::mutex mMutex;
    std::shared_ptr<const DeviceWeights> mWeights;
};

// The current CUDA context (CUcontext) and device, through the runtime's
// driver entry points (the library does not link libcuda); nullptr / -1 when
// there is none.
void* currentContext() noexcept;
int currentDevice() noexcept;

} // namespace trtp
