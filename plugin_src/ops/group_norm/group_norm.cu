// GroupNorm's plan (how each group is split into chunks, with clusters or two launches: a pure
// function of the shape and the GPU's description) and launch; the kernels are in kernels.cuh.
#include "common.cuh"
#include "group_norm.h"

#include <type_traits>

#include "host.h"
#include "kernels.cuh"

namespace trtp {
namespace {

using namespace detail;
using gn::roundUp;

// Calls f(std::integral_constant<GroupNormSkip, mode>{}) for a runtime skip mode.
template <class F> cudaError_t dispatchSkip(GroupNormSkip mode, F&& f) {
    switch (mode) {
    case GroupNormSkip::kNone: return f(std::integral_constant<GroupNormSkip, GroupNormSkip::kNone>{});
    case GroupNormSkip::kFull: return f(std::integral_constant<GroupNormSkip, GroupNormSkip::kFull>{});
    case GroupNormSkip::kPerChannel: return f(std::integral_constant<GroupNormSkip, GroupNormSkip::kPerChannel>{});
    }
    return cudaErrorInvalidValue;
}

// Calls f(clusterKernel<T, VEC, SKIP>) for every instantiation.
template <class T, int VEC, class F> void forEachSkipKernel(F& f) {
    f(clusterKernel<T, VEC, GroupNormSkip::kNone>);
    f(clusterKernel<T, VEC, GroupNormSkip::kFull>);
    f(clusterKernel<T, VEC, GroupNormSkip::kPerChannel>);
}
template <class T, class F> void forEachVecKernel(F& f) {
    forEachSkipKernel<T, 1>(f);
    forEachSkipKernel<T, IoSize<T>::kVec>(f);
}
template <class F> void forEachClusterKernel(F&& f) {
    forEachVecKernel<float>(f);
    forEachVecKernel<__half>(f);
    forEachVecKernel<__nv_bfloat16>(f);
}

// Dynamic shared memory of a cluster CTA: its chunk of x, and of a full skip.
int64_t clusterSmem(DType dt, GroupNormSkip skip, int64_t chunkLen) {
    return chunkLen * (dt == DType::kFloat32 ? 4 : 2) * (skip == GroupNormSkip::kFull ? 2 : 1);
}

struct Launch {
    unsigned grid;
    size_t smem;  // cluster CTAs' dynamic shared memory
    bool cluster; // one launch of clusterKernel (cluster size a.chunks), else the two passes
};

template <class T, int VEC, GroupNormSkip SKIP> cudaError_t launchPath(const Gn<T>& a, const Launch& l, cudaStream_t s) {
    if (l.cluster) {
        cudaLaunchAttribute attr = clusterAttribute(unsigned(a.chunks));
        return launchKernelWith(clusterKernel<T, VEC, SKIP>, l.grid, kThreads, l.smem, &attr, 1, s, a);
    }
    const cudaError_t e = launchKernel(statsKernel<T, VEC, SKIP>, l.grid, kThreads, s, a);
    return e != cudaSuccess ? e : launchKernel(normKernel<T, VEC, SKIP>, l.grid, kThreads, s, a);
}

// A plan the launch can run for this shape: a split of each group into chunks (the cluster's CTAs
// within 16 and the shared memory of any GPU; two launches' partials within the workspace bound).
bool planOk(const GroupNormPlan& p, DType dt, GroupNormSkip skip, int64_t totalGroups, int64_t groupSize) {
    if (p.chunks < 1 || p.chunkLen < 1 || p.chunkLen % kChunkAlign || p.chunkLen > kMaxIndex) return false;
    if (p.chunks != ceilDiv(groupSize, p.chunkLen) || totalGroups > int64_t(INT32_MAX) / p.chunks) return false;
    if (p.cluster) return p.chunks <= kMaxCluster && clusterSmem(dt, skip, p.chunkLen) <= kMaxClusterSmem;
    return p.chunks == 1 || totalGroups * p.chunks <= kTargetCtas + totalGroups;
}

// Elements per chunk when a group is split into `chunks`, rounded up to kChunkAlign.
int64_t chunkLenFor(int64_t groupSize, int64_t chunks) {
    return ceilDiv(ceilDiv(groupSize, chunks), kChunkAlign) * kChunkAlign;
}

// The cluster plan (groupNormPlan's rule), or {} when a group does not fit in a cluster's shared memory.
GroupNormPlan clusterPlan(DType dt, int64_t total, int64_t groupSize, GroupNormSkip skip, const GroupNormDevice& dev) {
    const int64_t perBlock = dev.smemPerBlock, maxCluster = dev.maxCluster;
    const int64_t portable = maxCluster < kPortableCluster ? maxCluster : kPortableCluster;
    if (clusterSmem(dt, skip, ceilDiv(groupSize, maxCluster)) > perBlock) return {}; // also keeps the products small
    const int64_t target = dev.smemPerSm / kMinBlocks - kSmemReserve > 0 ? dev.smemPerSm / kMinBlocks - kSmemReserve : 1;
    const int64_t forSmem = ceilDiv(clusterSmem(dt, skip, groupSize), target);
    const int64_t forFill = ceilDiv(kClusterCtasPerSm * dev.sms, total);
    int64_t size = 1;
    while (size < portable && (size < forSmem || size < forFill)) size *= 2;
    while (size < maxCluster && clusterSmem(dt, skip, chunkLenFor(groupSize, size)) > perBlock) size *= 2;
    const int64_t len = chunkLenFor(groupSize, size);
    if (size > maxCluster || clusterSmem(dt, skip, len) > perBlock) return {};
    GroupNormPlan p;
    p.chunkLen = len;
    p.chunks = ceilDiv(groupSize, len);
    p.cluster = true;
    return p;
}


// Whether the current GPU can run a cluster of the plan (registers, shared memory, cluster size).
bool clusterFits(DType dt, GroupNormSkip skip, const GroupNormPlan& p) {
    const cudaError_t e = dispatchDType(dt, [&](auto tag) {
        using T = decltype(tag);
        return dispatchSkip(skip, [&](auto mode) {
            cudaLaunchAttribute attr = clusterAttribute(unsigned(p.chunks));
            const size_t smem = size_t(clusterSmem(dt, skip, p.chunkLen));
            const cudaLaunchConfig_t cfg = launchConfig(unsigned(p.chunks), kThreads, smem, &attr, 1, nullptr);
            const auto kernel = clusterKernel<T, IoSize<T>::kVec, decltype(mode)::value>;
            int clusters = 0;
            const cudaError_t err = cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg);
            return err != cudaSuccess ? err : clusters > 0 ? cudaSuccess : cudaErrorInvalidConfiguration;
        });
    });
    return succeeded(e);
}

GroupNormDevice queryDevice(int dev) {
    int major = 0, clusters = 0, sms = 0, smemSm = 0, smemBlock = 0;
    if (!succeeded(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev)) || major < 9 ||
        !succeeded(cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, dev)) || !clusters ||
        !succeeded(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) ||
        !succeeded(cudaDeviceGetAttribute(&smemSm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev)) ||
        !succeeded(cudaDeviceGetAttribute(&smemBlock, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)))
        return {};
    // An sm_90+ image: not PTX of an older architecture compiled for this GPU (whose cluster kernel traps).
    cudaFuncAttributes fa = {};
    if (!succeeded(cudaFuncGetAttributes(&fa, clusterKernel<float, 4, GroupNormSkip::kNone>)) || fa.binaryVersion < 90 ||
        (fa.ptxVersion != 0 && fa.ptxVersion < 90) || smemBlock <= kStaticSmemBound)
        return {};
    GroupNormDevice d;
    d.sms = sms;
    d.smemPerSm = smemSm;
    d.smemPerBlock = int32_t(smemBlock - kStaticSmemBound);
    d.maxCluster = int32_t(kMaxCluster);
    bool ok = true;
    forEachClusterKernel([&](auto kernel) {
        ok = ok && succeeded(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, d.smemPerBlock));
        if (!succeeded(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1)))
            d.maxCluster = int32_t(kPortableCluster);
        // a hint: the kernel keeps its data in shared memory and little in L1
        const int maxShared = cudaSharedmemCarveoutMaxShared;
        succeeded(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, maxShared));
    });
    return ok ? d : GroupNormDevice{};
}


} // namespace

GroupNormDevice groupNormDevice() noexcept { return perDevice<GroupNormDevice>(queryDevice); }

GroupNormPlan groupNormPlan(DType dt, int64_t n, int64_t groups, int64_t groupSize, GroupNormSkip skip,
                            const GroupNormDevice& dev) {
    GroupNormPlan p;
    if (n < 1 || groups < 1 || groupSize < 1 || n > INT64_MAX / groups) return p;
    const int64_t total = n * groups;
    int64_t chunks = ceilDiv(kTargetCtas, total);
    const int64_t cap = groupSize / kMinChunk > 1 ? groupSize / kMinChunk : 1;
    if (chunks > cap) chunks = cap;
    p.chunkLen = chunkLenFor(groupSize, chunks);
    p.chunks = ceilDiv(groupSize, p.chunkLen);
    if (dev.maxCluster < 1 || dev.sms < 1 || dev.smemPerBlock < 1 || total > int64_t(INT32_MAX) / kMaxCluster) return p;
    // H200 sweep of every plan (RESULTS.md, History): clusters beat the two launches only for FP32 with
    // many groups (8x640x64x64: 69 vs 55% of copy); with SD's 64 groups, or 16-bit, every CTA of the
    // single wave loads, waits on its cluster and stores at once, and the two launches were faster.
    if (dt != DType::kFloat32 || total < 256) return p;
    const GroupNormPlan c = clusterPlan(dt, total, groupSize, skip, dev);
    const int64_t busy = dev.sms < total * p.chunks ? dev.sms : total * p.chunks;
    return c.cluster && total * c.chunks >= busy ? c : p;
}

GroupNormPlan groupNormConfigure(DType dt, int64_t n, int64_t groups, int64_t groupSize, GroupNormSkip skip) noexcept {
    const GroupNormPlan p = groupNormPlan(dt, n, groups, groupSize, skip, groupNormDevice());
    return !p.cluster || clusterFits(dt, skip, p) ? p : groupNormPlan(dt, n, groups, groupSize, skip);
}

// The split design's partials: at most total * ceil(kTargetCtas / total) <= kTargetCtas + total
// (float2 each), then one shift per group; the shifts start 256-byte aligned.
size_t splitWorkspaceSize(int64_t n, int64_t groups) {
    if (n < 1 || groups < 1) return 0;
    const size_t total = size_t(n) * size_t(groups);
    return roundUp((size_t(kTargetCtas) + total) * sizeof(float2)) + roundUp(total * sizeof(float));
}

GroupNormChoice groupNormChoose(DType dt, const GroupNormShape& s, GroupNormAct act) noexcept {
    GroupNormChoice c;
    try {
        const bool cl = s.layout == GroupNormLayout::kChannelsLast;
        if (cl || groupNormResidentFirst(dt, s, act)) c.resident = groupNormResidentConfigure(dt, s, true);
        // resident first for its cluster plan alone, where the GPU cannot run or hold it: the split design
        if (!cl && !c.resident.cluster && !groupNormResidentFirst(dt, s, act, false)) c.resident = {};
        if (!cl && !c.resident.fused) {
            c.resident = {};
            if (s.groups > 0 && s.channels % s.groups == 0)
                c.plan = groupNormConfigure(dt, s.n, s.groups, s.channels / s.groups * s.spatial, s.skip);
        }
    } catch (...) {
        return {};
    }
    return c;
}

size_t groupNormWorkspaceSize(int64_t n, int64_t groups, GroupNormLayout layout) {
    const size_t resident = groupNormResidentWorkspaceSize(n, groups, layout);
    if (layout == GroupNormLayout::kChannelsLast) return resident;
    const size_t split = splitWorkspaceSize(n, groups);
    return split > resident ? split : resident;
}

size_t groupNormWorkspaceSize(int64_t n, int64_t groups) {
    return groupNormWorkspaceSize(n, groups, GroupNormLayout::kChannelsLast) >
                   groupNormWorkspaceSize(n, groups, GroupNormLayout::kChannelsFirst)
               ? groupNormWorkspaceSize(n, groups, GroupNormLayout::kChannelsLast)
               : groupNormWorkspaceSize(n, groups, GroupNormLayout::kChannelsFirst);
}

cudaError_t launchGroupNorm(DType dt, const GroupNormArgs& args, cudaStream_t stream, GroupNormPlan* ran,
                            GroupNormResidentPlan* ranResident) {
    if (ran) *ran = {};
    if (ranResident) *ranResident = {};
    if (args.layout == GroupNormLayout::kChannelsLast || args.resident.grid > 0)
        return launchGroupNormResident(dt, args, stream, ranResident);
    if (args.layout != GroupNormLayout::kChannelsFirst) return cudaErrorInvalidValue;
    const int64_t n = args.n, c = args.channels, hw = args.spatial, g = args.groups;
    if (n < 0 || c < 0 || hw < 0 || g < 1 || c % g || !(args.epsilon >= 0.f)) return cudaErrorInvalidValue;
    if (args.act != GroupNormAct::kNone && args.act != GroupNormAct::kSilu) return cudaErrorInvalidValue;
    if (args.skipMode != GroupNormSkip::kNone && args.skipMode != GroupNormSkip::kFull &&
        args.skipMode != GroupNormSkip::kPerChannel)
        return cudaErrorInvalidValue;
    if (dt != DType::kFloat32 && dt != DType::kFloat16 && dt != DType::kBFloat16) return cudaErrorInvalidValue;
    if (n == 0 || c == 0 || hw == 0) return cudaSuccess;
    if (!args.x || !args.y || !args.gamma || (args.skipMode != GroupNormSkip::kNone && !args.skip)) return cudaErrorInvalidValue;
    if (n > INT64_MAX / c || n * c > INT64_MAX / hw) return cudaErrorInvalidValue;
    const int64_t total = n * g, groupSize = c / g * hw;
    const GroupNormPlan twoLaunches = groupNormPlan(dt, n, g, groupSize, args.skipMode);
    if (!planOk(twoLaunches, dt, args.skipMode, total, groupSize)) return cudaErrorInvalidValue;
    GroupNormPlan plan = planOk(args.plan, dt, args.skipMode, total, groupSize) ? args.plan : twoLaunches;
    if (hw > kMaxIndex || c / g > kMaxIndex) return cudaErrorInvalidValue;
    const size_t partialBytes = roundUp(size_t((kTargetCtas + total) * int64_t(sizeof(float2))));
    if (!args.workspace || args.workspaceSize < splitWorkspaceSize(n, g) || (reinterpret_cast<uintptr_t>(args.workspace) & 7u))
        return cudaErrorInvalidValue;
    const int vecElems = dt == DType::kFloat32 ? 4 : 8;
    const bool vec = hw % vecElems == 0 && aligned16(args.x) && aligned16(args.y) && (!args.sum || aligned16(args.sum)) &&
                     (args.skipMode != GroupNormSkip::kFull || aligned16(args.skip));
    return dispatchDType(dt, [&](auto tag) -> cudaError_t {
        using T = decltype(tag);
        Gn<T> a{static_cast<const T*>(args.x), static_cast<const T*>(args.skip), args.bias, args.gamma, args.beta,
                static_cast<T*>(args.y), static_cast<T*>(args.sum), static_cast<float2*>(args.workspace),
                reinterpret_cast<float*>(static_cast<char*>(args.workspace) + partialBytes), groupSize, g,
                0, 0, int32_t(hw), int32_t(c / g), args.epsilon, args.skipMode, args.act};
        const auto run = [&](const GroupNormPlan& p) {
            a.chunks = p.chunks, a.chunkLen = p.chunkLen;
            const size_t smem = p.cluster ? size_t(clusterSmem(dt, args.skipMode, p.chunkLen)) : 0;
            const Launch l{unsigned(total * p.chunks), smem, p.cluster};
            return dispatchSkip(args.skipMode, [&](auto mode) {
                constexpr GroupNormSkip kMode = decltype(mode)::value;
                return vec ? launchPath<T, IoSize<T>::kVec, kMode>(a, l, stream) : launchPath<T, 1, kMode>(a, l, stream);
            });
        };
        cudaError_t e = run(plan);
        if (plan.cluster && !succeeded(e)) { // not launchable here (another device or context than configured)
            plan = twoLaunches;
            e = run(plan);
        }
        if (e == cudaSuccess && ran) *ran = plan;
        return e;
    });
}

} // namespace trtp
