#include "device_weights.h"

#include <cuda.h>

#include "errors.h"

namespace trtp {
namespace {

struct Driver {
    CUresult (*getCurrent)(CUcontext*) = nullptr;
    CUresult (*push)(CUcontext) = nullptr;
    CUresult (*pop)(CUcontext*) = nullptr;
};

const Driver& driver() noexcept {
    static const Driver d = [] {
        Driver r;
        auto get = [](const char* name, auto& fn) {
            void* p = nullptr;
            cudaDriverEntryPointQueryResult q{};
            if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &q) == cudaSuccess && q == cudaDriverEntryPointSuccess)
                fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
            else
                cudaGetLastError(); // the query's own failure is not the caller's error
        };
        get("cuCtxGetCurrent", r.getCurrent);
        get("cuCtxPushCurrent", r.push);
        get("cuCtxPopCurrent", r.pop);
        return r;
    }();
    return d;
}

// Makes ctx current for its lifetime when it is not already.
class ContextScope {
public:
    explicit ContextScope(void* ctx) noexcept {
        const auto& d = driver();
        if (ctx && d.push && d.pop && currentContext() != ctx)
            mPushed = d.push(static_cast<CUcontext>(ctx)) == CUDA_SUCCESS;
    }
    ~ContextScope() {
        CUcontext ignored;
        if (mPushed) driver().pop(&ignored);
    }

private:
    bool mPushed = false;
};

} // namespace

// A thread that has made no CUDA call yet has no current context; its first
// launch binds the device's primary context: compare devices then.
bool DeviceWeights::current() const noexcept {
    void* ctx = currentContext();
    return ctx && mContext ? ctx == mContext : mDevice == currentDevice();
}

void* currentContext() noexcept {
    CUcontext ctx = nullptr;
    if (auto fn = driver().getCurrent) fn(&ctx);
    return ctx;
}

int currentDevice() noexcept {
    int dev = -1;
    if (cudaGetDevice(&dev) != cudaSuccess) return -1;
    return dev;
}

std::shared_ptr<const DeviceWeights> DeviceWeights::upload(const HostWeights& arrays) {
    std::shared_ptr<DeviceWeights> w(new DeviceWeights());
    constexpr size_t kAlign = 4; // floats: every array starts 16-byte aligned (the kernels' vector loads)
    auto padded = [](size_t n) { return (n + kAlign - 1) / kAlign * kAlign; };
    size_t total = 0;
    for (const auto* a : arrays) total += padded(a->size());
    cudaError_t err = cudaGetDevice(&w->mDevice);
    if (err != cudaSuccess) fail("no CUDA device for the weights: %s", cudaGetErrorString(err));
    if (total) {
        err = cudaMalloc(reinterpret_cast<void**>(&w->mBase), total * sizeof(float));
        if (err != cudaSuccess) fail("cudaMalloc of %zu weight bytes on device %d failed: %s", total * sizeof(float), w->mDevice, cudaGetErrorString(err));
    }
    w->mContext = currentContext(); // after cudaMalloc: the runtime has made its context current by now
    size_t offset = 0;
    for (const auto* a : arrays) {
        if (a->empty()) {
            w->mPtrs.push_back(nullptr);
            continue;
        }
        err = cudaMemcpy(w->mBase + offset, a->data(), a->size() * sizeof(float), cudaMemcpyHostToDevice);
        if (err != cudaSuccess) fail("cudaMemcpy of weights to device %d failed: %s", w->mDevice, cudaGetErrorString(err));
        w->mPtrs.push_back(w->mBase + offset);
        offset += padded(a->size());
    }
    return w;
}

DeviceWeights::~DeviceWeights() {
    if (!mBase) return;
    ContextScope scope(mContext);
    int saved = -1;
    const bool switchDevice = !mContext && cudaGetDevice(&saved) == cudaSuccess && saved != mDevice;
    if (switchDevice) cudaSetDevice(mDevice);
    cudaFree(mBase);
    if (switchDevice) cudaSetDevice(saved);
}

void WeightsSlot::ensure(const HostWeights& arrays) {
    std::lock_guard<std::mutex> lock(mMutex);
    if (mWeights) {
        if (mWeights->current()) return;
        fail("weights live on device %d (another CUDA context): clone the plugin for this device", mWeights->device());
    }
    mWeights = DeviceWeights::upload(arrays);
}

void WeightsSlot::reset() noexcept {
    std::shared_ptr<const DeviceWeights> old;
    {
        std::lock_guard<std::mutex> lock(mMutex);
        old.swap(mWeights);
    }
}

bool WeightsSlot::ready() const noexcept {
    std::lock_guard<std::mutex> lock(mMutex);
    return mWeights != nullptr;
}

std::shared_ptr<const DeviceWeights> WeightsSlot::forLaunch() const {
    std::shared_ptr<const DeviceWeights> w;
    {
        std::lock_guard<std::mutex> lock(mMutex);
        w = mWeights;
    }
    if (!w) fail("weights are not on the device: the plugin was not initialized (initialize/configurePlugin/onShapeChange must run before enqueue)");
    if (!w->current())
        fail("weights live on device %d in another CUDA context than the current one (device %d): the plugin was not initialized here",
             w->device(), currentDevice());
    return w;
}

} // namespace trtp
