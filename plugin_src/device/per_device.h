// CUDA answers that are not errors, and what a query says about each device, asked once per device.
#pragma once
#include <cuda_runtime_api.h>

#include <mutex>

namespace trtp {

// A CUDA call's success; a failure's error is cleared (an answer here, not an error for the caller's
// next check).
inline bool succeeded(cudaError_t e) {
    if (e != cudaSuccess) cudaGetLastError();
    return e == cudaSuccess;
}

// query(device) for the current device, asked once per device (the first 64; others every time);
// {} without a device or on any error.
template <class T, class F> T perDevice(F&& query) noexcept {
    constexpr int kDevices = 64;
    static std::once_flag once[kDevices];
    static T known[kDevices];
    try {
        int dev = -1;
        if (!succeeded(cudaGetDevice(&dev)) || dev < 0) return {};
        if (dev >= kDevices) return query(dev);
        std::call_once(once[dev], [&] { known[dev] = query(dev); });
        return known[dev];
    } catch (...) {
        return {};
    }
}

} // namespace trtp
