#include "cubins.h"

#include <algorithm>
#include <mutex>
#include <tuple>

#include "per_device.h"

namespace trtp {
namespace {

// A loaded kernel per table entry (a cudaLibrary_t is loaded once for every device).
struct Loaded {
    std::once_flag once;
    cudaKernel_t kernel = nullptr;
    cudaError_t status = cudaSuccess;
};

Loaded* loadedTable() {
    static Loaded* table = new Loaded[kCubinCount > 0 ? kCubinCount : 1]; // lives as long as the process
    return table;
}

int32_t archOf(int dev) {
    int major = 0, minor = 0;
    if (!succeeded(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev)) ||
        !succeeded(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev)))
        return 0;
    return major * 10 + minor;
}

} // namespace

const Cubin* findCubin(int32_t op, int32_t form, int32_t dtype, int64_t hidden, bool small) noexcept {
    if (kCubinCount == 0) return nullptr;
    const auto key = [](const Cubin& c) { return std::make_tuple(c.arch, c.op, c.form, c.dtype, c.hidden, c.small); };
    const auto want = std::make_tuple(perDevice<int32_t>(archOf), op, form, dtype, hidden, int32_t(small));
    const Cubin* end = kCubins + kCubinCount;
    const Cubin* c = std::lower_bound(kCubins, end, want, [&](const Cubin& a, const auto& w) { return key(a) < w; });
    return c != end && key(*c) == want ? c : nullptr;
}

cudaError_t launchCubin(const Cubin& c, unsigned grid, void** args, int nargs, cudaStream_t stream) noexcept {
    const int32_t i = int32_t(&c - kCubins);
    if (i < 0 || i >= kCubinCount || nargs < 0 || nargs > 30) return cudaErrorInvalidValue;
    Loaded& l = loadedTable()[i];
    try {
        std::call_once(l.once, [&] {
            cudaLibrary_t lib = nullptr;
            l.status = cudaLibraryLoadData(&lib, c.image, nullptr, nullptr, 0, nullptr, nullptr, 0);
            if (l.status == cudaSuccess) l.status = cudaLibraryGetKernel(&l.kernel, lib, c.symbol);
            if (l.status == cudaSuccess && c.shared > 48 * 1024)
                l.status = cudaFuncSetAttribute(reinterpret_cast<const void*>(l.kernel),
                                                cudaFuncAttributeMaxDynamicSharedMemorySize, c.shared);
            if (l.status != cudaSuccess) cudaGetLastError();
        });
    } catch (...) {
        return cudaErrorUnknown;
    }
    if (l.status != cudaSuccess) return l.status;
    void* scratch[2] = {nullptr, nullptr};
    void* all[32];
    for (int k = 0; k < nargs; ++k) all[k] = args[k];
    all[nargs] = &scratch[0], all[nargs + 1] = &scratch[1];
    return cudaLaunchKernel(reinterpret_cast<const void*>(l.kernel), dim3(grid), dim3(unsigned(32 * c.warps)), all,
                            size_t(c.shared), stream);
}

} // namespace trtp
