// The floors of GroupNorm's one-launch designs (bench_group_norm.py measures them): each CTA copies its share
// of x to y through shared memory, as the fused plans stage a range, with one barrier between its loads and its
// stores: none, the CTA's own (whole groups per CTA), its cluster's or the grid's (cooperative).
#include "common.cuh"
#include "group_norm.h"
#include "packs.cuh"

namespace trtp {
namespace {

constexpr int kFloorThreads = 512;

template <GroupNormFloor B>
__global__ void __launch_bounds__(kFloorThreads) floorKernel(const __half* x, __half* y, int64_t n, int64_t per) {
    extern __shared__ __align__(16) __half tile[];
    const int64_t base = int64_t(blockIdx.x) * per;
    const int32_t m = int32_t(base < n ? (n - base < per ? n - base : per) : 0);
    stage<__half, 8>(tile, x + base, m);
    waitOwnStaged(); // a thread stores the packs it loaded itself: no barrier needed
    if constexpr (B == GroupNormFloor::kCta) __syncthreads();
    if constexpr (B == GroupNormFloor::kCluster) clusterBarrier();
    if constexpr (B == GroupNormFloor::kGrid) cooperative_groups::this_grid().sync();
    for (int32_t j = int32_t(threadIdx.x) * 8; j < m; j += kFloorThreads * 8)
        *reinterpret_cast<int4*>(y + base + j) = *reinterpret_cast<const int4*>(tile + j);
}

template <GroupNormFloor B>
cudaError_t launchFloor(const __half* x, __half* y, int64_t n, int32_t ctas, int32_t cluster, cudaStream_t stream) {
    const int64_t per = ceilDiv(ceilDiv(n, int64_t(ctas)), int64_t(8)) * 8;
    int dev = 0, optin = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (e != cudaSuccess) return e;
    const size_t smem = size_t(per) * sizeof(__half);
    if (smem > size_t(optin)) return cudaErrorInvalidValue; // a CTA's share does not fit on chip
    e = cudaFuncSetAttribute(floorKernel<B>, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
    if (e != cudaSuccess) return e;
    cudaLaunchAttribute attr = {};
    if constexpr (B == GroupNormFloor::kCluster) attr = clusterAttribute(unsigned(cluster));
    else attr.id = cudaLaunchAttributeCooperative, attr.val.cooperative = 1;
    const bool attrs = B == GroupNormFloor::kCluster || B == GroupNormFloor::kGrid;
    return launchKernelWith(floorKernel<B>, unsigned(ctas), kFloorThreads, smem, attrs ? &attr : nullptr, attrs ? 1 : 0,
                            stream, x, y, n, per);
}

} // namespace

cudaError_t launchGroupNormFloor(GroupNormFloor barrier, const void* x, void* y, int64_t bytes, int32_t ctas,
                                 int32_t cluster, cudaStream_t stream) noexcept {
    if (!x || !y || !aligned16(x) || !aligned16(y) || bytes < 16 || bytes % 16 || ctas < 1 || ctas > (1 << 20))
        return cudaErrorInvalidValue;
    if (barrier == GroupNormFloor::kCluster &&
        (cluster < 1 || cluster > 8 || ctas % cluster || groupNormDevice().maxCluster < cluster))
        return cudaErrorInvalidValue;
    const auto* xs = static_cast<const __half*>(x);
    auto* ys = static_cast<__half*>(y);
    const int64_t n = bytes / int64_t(sizeof(__half));
    switch (barrier) {
    case GroupNormFloor::kNone: return launchFloor<GroupNormFloor::kNone>(xs, ys, n, ctas, cluster, stream);
    case GroupNormFloor::kCta: return launchFloor<GroupNormFloor::kCta>(xs, ys, n, ctas, cluster, stream);
    case GroupNormFloor::kCluster: return launchFloor<GroupNormFloor::kCluster>(xs, ys, n, ctas, cluster, stream);
    case GroupNormFloor::kGrid: return launchFloor<GroupNormFloor::kGrid>(xs, ys, n, ctas, cluster, stream);
    }
    return cudaErrorInvalidValue;
}

} // namespace trtp
