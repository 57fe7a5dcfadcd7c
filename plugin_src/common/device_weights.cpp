#include "device_weights.h"

#include "errors.h"

namespace trtp {

std::shared_ptr<DeviceWeights> DeviceWeights::upload(const std::vector<const std::vector<float>*>& arrays) {
    std::shared_ptr<DeviceWeights> w(new DeviceWeights());
    size_t total = 0;
    for (const auto* a : arrays) total += a->size();
    if (total == 0) {
        w->mPtrs.assign(arrays.size(), nullptr);
        return w;
    }
    cudaError_t err = cudaMalloc(reinterpret_cast<void**>(&w->mBase), total * sizeof(float));
    if (err != cudaSuccess) fail("cudaMalloc of %zu weight bytes failed: %s", total * sizeof(float), cudaGetErrorString(err));
    size_t offset = 0;
    for (const auto* a : arrays) {
        if (a->empty()) {
            w->mPtrs.push_back(nullptr);
            continue;
        }
        err = cudaMemcpy(w->mBase + offset, a->data(), a->size() * sizeof(float), cudaMemcpyHostToDevice);
        if (err != cudaSuccess) fail("cudaMemcpy of weights failed: %s", cudaGetErrorString(err));
        w->mPtrs.push_back(w->mBase + offset);
        offset += a->size();
    }
    return w;
}

DeviceWeights::~DeviceWeights() {
    if (mBase) cudaFree(mBase);
}

} // namespace trtp
