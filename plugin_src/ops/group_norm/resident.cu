// GroupNorm's resident design: its plan (a pure function of the shape and the GPU's description) and
// launch; the kernel is in resident_kernel.cuh, the shape's derived sizes in geometry.cuh.
#include "geometry.cuh"
#include "in_registers.cuh"
#include "resident_kernel.cuh"

#include "host.h"

namespace trtp {
namespace {

using gn::roundUp;

// Calls f(residentKernel<T, VEC, L, STREAM>) for every instantiation.
template <class T, bool STREAM, class F> void forEachStreamKernel(F& f) {
    f(residentKernel<T, 1, GroupNormLayout::kChannelsFirst, STREAM>);
    f(residentKernel<T, IoSize<T>::kVec, GroupNormLayout::kChannelsFirst, STREAM>);
    f(residentKernel<T, 1, GroupNormLayout::kChannelsLast, STREAM>);
    f(residentKernel<T, IoSize<T>::kVec, GroupNormLayout::kChannelsLast, STREAM>);
    if constexpr (sizeof(T) == 2) f(residentKernel<T, kNarrowVec, GroupNormLayout::kChannelsLast, STREAM>);
}
template <class T, class F> void forEachLayoutKernel(F& f) {
    forEachStreamKernel<T, true>(f);
    forEachStreamKernel<T, false>(f);
    f(residentKernel<T, IoSize<T>::kVec, GroupNormLayout::kChannelsFirst, false, true>);
    f(residentKernel<T, IoSize<T>::kVec, GroupNormLayout::kChannelsLast, false, true>);
}
template <class F> void forEachKernelOf(F&& f) {
    forEachLayoutKernel<float>(f);
    forEachLayoutKernel<__half>(f);
    forEachLayoutKernel<__nv_bfloat16>(f);
}

GroupNormResidentDevice queryDevice(int dev) {
    int sms = 0, smem = 0, coop = 0;
    if (!succeeded(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) ||
        !succeeded(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)) ||
        !succeeded(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev)))
        return {};
    GroupNormResidentDevice d;
    d.sms = coop ? sms : 0;
    d.smemPerBlock = int32_t(smem - kStaticSmem > 0 ? smem - kStaticSmem : 0);
    bool ok = true;
    forEachKernelOf([&](auto kernel) {
        ok = ok && succeeded(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, d.smemPerBlock));
    });
    if (!ok) d.smemPerBlock = 48 * 1024 - int32_t(kStaticSmem);
    const int32_t clusters = groupNormDevice().maxCluster; // 0 without clusters or an sm_90+ image
    d.maxCluster = int32_t(clusters < kClusterCtas ? clusters : kClusterCtas);
    return d;
}

// The kernel a plan runs: staged (a fused plan with every unit of each range on chip) without the
// global-memory walks; lean (staged, the widest packs, no skip, bias or sum) without the code for those too.
template <class T, int VEC, GroupNormLayout L> auto kernelFor(bool staged, bool lean) {
    if constexpr (VEC == IoSize<T>::kVec)
        if (lean) return residentKernel<T, VEC, L, false, true>;
    return staged ? residentKernel<T, VEC, L, false> : residentKernel<T, VEC, L, true>;
}

// The kernel a plan with geometry g runs (its layout and pack width; lean: see lean()).
template <class T> auto kernelOf(const Geometry& g, const GroupNormResidentPlan& p, bool lean = false) {
    constexpr int kVec = IoSize<T>::kVec;
    constexpr auto kCl = GroupNormLayout::kChannelsLast, kCf = GroupNormLayout::kChannelsFirst;
    const bool st = staged(p);
    if constexpr (sizeof(T) == 2)
        if (g.cl && g.vec == kNarrowVec) return kernelFor<T, kNarrowVec, kCl>(st, lean);
    if (g.cl) return g.vec > 1 ? kernelFor<T, kVec, kCl>(st, lean) : kernelFor<T, 1, kCl>(st, lean);
    return g.vec > 1 ? kernelFor<T, kVec, kCf>(st, lean) : kernelFor<T, 1, kCf>(st, lean);
}

// A launch with no skip, bias or sum output: the lean kernels' and the in-registers kernel's.
template <class T> bool plain(const Gn<T>& a) { return a.skipMode == GroupNormSkip::kNone && !a.bias && !a.sum; }

// The lean kernel where plan p runs it: fused, all staged, the widest packs, a plain launch.
template <class T> bool lean(const Geometry& g, const Gn<T>& a, const GroupNormResidentPlan& p) {
    return staged(p) && g.vec == IoSize<T>::kVec && plain(a);
}

// groupNormInRegisters on plan p's geometry g (a valid shape's, the plan's packs and windows).
GroupNormInRegisters inRegistersOf(const Geometry& g, DType dt, const GroupNormShape& s, const GroupNormResidentPlan& p,
                                   bool lean, const GroupNormResidentDevice& dev) {
    if (!lean || s.skip != GroupNormSkip::kNone || !staged(p)) return {};
    const int64_t vec = vecOf(dt), cpg = s.channels / s.groups;
    if (g.vec != vec || !(local(g, p) || (!g.cl && p.cluster > 1))) return {};
    GroupNormInRegisters k;
    k.vec = int32_t(!g.cl || cpg % vec == 0 ? vec : cpg % (vec / 2) == 0 ? vec / 2 : 0);
    if (!k.vec || (g.cl && (g.cs != s.channels || s.spatial * g.cs >= kMaxOffset))) return {};
    if (!g.cl) // channels-first: the fewest CTAs per group (a cluster) that hold it in 4 packs per thread
        while (g.segLen / k.cluster / k.vec > 4 * kThreads && k.cluster < kClusterCtas) k.cluster *= 2;
    if (k.cluster > 1 && (dev.maxCluster < k.cluster || g.segLen % (k.cluster * k.vec))) return {};
    // Clusters only where the grid is one wave at 2 CTAs per SM: at 512 CTAs and more (2x640x64x64, 4x320x64x64)
    // the staged plans measured 10-27% faster.
    if (k.cluster > 1 && g.units / g.segLen * k.cluster > 2 * int64_t(dev.sms)) return {};
    const int64_t perPixel = g.cl ? cpg / k.vec : 1;                           // packs of a pixel's group channels
    const int64_t lines = g.cl ? s.spatial : g.segLen / k.cluster / k.vec; // pixels (channels-first: packs)
    if (perPixel > kThreads) return {};
    k.rows = std::min<int64_t>(lines, kThreads / perPixel);
    const int64_t steps = ceilDiv(lines, k.rows);
    k.packs = steps == 1 ? 1 : steps == 2 ? 2 : steps <= 4 ? 4 : 0;
    k.threads = (k.rows * perPixel + 31) / 32 * 32;
    return k.packs ? k : GroupNormInRegisters{};
}

} // namespace

GroupNormInRegisters groupNormInRegisters(DType dt, const GroupNormShape& s, bool aligned, const GroupNormResidentPlan& p,
                                          bool lean, const GroupNormResidentDevice& dev) {
    if (!shapeOk(s) || s.n < 1 || s.spatial < 1) return {};
    const Geometry wide = geometry(dt, s, vecFor(dt, s, aligned));
    return clThreadsOk(wide) ? inRegistersOf(geometryOfPlan(wide, dt, s, aligned, p), dt, s, p, lean, dev)
                             : GroupNormInRegisters{};
}

namespace {

template <class T, bool CL, int K = 1> auto inRegistersKernelFor(const GroupNormInRegisters& k) {
    constexpr int kVec = IoSize<T>::kVec, kHalf = kVec / 2;
    if constexpr (CL) // channels-first groups are whole 16-byte packs here
        if (k.vec == kHalf)
            return k.packs == 1 ? inRegistersKernel<T, kHalf, 1, CL>
                 : k.packs == 2 ? inRegistersKernel<T, kHalf, 2, CL>
                                : inRegistersKernel<T, kHalf, 4, CL>;
    return k.packs == 1 ? inRegistersKernel<T, kVec, 1, CL, K>
         : k.packs == 2 ? inRegistersKernel<T, kVec, 2, CL, K>
                        : inRegistersKernel<T, kVec, 4, CL, K>;
}

template <class T>
cudaError_t launchInRegisters(const Geometry& g, const Gn<T>& a, const GroupNormInRegisters& k, cudaStream_t stream) {
    Gn<T> b = a;
    b.groups = a.groups * a.windows, b.channels = a.channels * a.windows, b.windows = 1; // every group, unwindowed
    b.groupsDiv = FastDiv(uint32_t(b.groups));
    if (g.cl) b.packs = int32_t(a.cpg / k.vec), b.packsDiv = FastDiv(uint32_t(b.packs)), b.rows = int32_t(k.rows);
    const int64_t ctas = g.units / g.segLen * (g.cl ? b.groups : k.cluster);
    if (k.cluster > 1) {
        cudaLaunchAttribute attr = clusterAttribute(unsigned(k.cluster));
        const auto kernel = k.cluster == 2   ? inRegistersKernelFor<T, false, 2>(k)
                            : k.cluster == 4 ? inRegistersKernelFor<T, false, 4>(k)
                                             : inRegistersKernelFor<T, false, 8>(k);
        return launchKernelWith(kernel, unsigned(ctas), unsigned(k.threads), 0, &attr, 1, stream, b);
    }
    return launchKernel(g.cl ? inRegistersKernelFor<T, true>(k) : inRegistersKernelFor<T, false>(k), unsigned(ctas),
                        unsigned(k.threads), stream, b);
}

template <class T>
cudaError_t launchWith(const Geometry& g, const Gn<T>& a, const GroupNormResidentPlan& p, size_t smem, cudaStream_t stream) {
    const auto kernel = kernelOf<T>(g, p, lean(g, a, p));
    if (p.fused) { // cooperative unless each CTA or cluster holds whole segments
        cudaLaunchAttribute attr = {};
        if (a.cluster) attr = clusterAttribute(unsigned(p.cluster));
        else attr.id = cudaLaunchAttributeCooperative, attr.val.cooperative = 1;
        Gn<T> b = a;
        b.stats = b.norm = true;
        return launchKernelWith(kernel, unsigned(p.grid), kThreads, smem, a.local ? nullptr : &attr, a.local ? 0 : 1,
                                stream, b);
    }
    Gn<T> b = a;
    b.stats = true, b.norm = false;
    cudaError_t e = launchKernelWith(kernel, unsigned(p.grid), kThreads, smem, nullptr, 0, stream, b);
    if (e != cudaSuccess) return e;
    b.stats = false, b.norm = true;
    return launchKernelWith(kernel, unsigned(p.grid), kThreads, smem, nullptr, 0, stream, b);
}


// Whether every CTA of fused plan p fits on the current device at once, as its cooperative launch needs.
bool coResident(DType dt, const Geometry& g, const GroupNormResidentPlan& p) {
    int dev = 0, sms = 0, blocks = 0;
    if (!succeeded(cudaGetDevice(&dev)) || !succeeded(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)))
        return false;
    const cudaError_t e = dispatchDType(dt, [&](auto tag) { // the kernel launchWith runs for this plan
        return cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernelOf<decltype(tag)>(g, p), kThreads, smemOf(g, p));
    });
    return succeeded(e) && int64_t(blocks) * sms >= p.grid;
}

// Whether the current GPU runs one cluster of cluster plan p (an sm_90+ image, registers, shared memory).
bool clustersFit(DType dt, const Geometry& g, const GroupNormResidentPlan& p) {
    if (groupNormDevice().maxCluster < p.cluster) return false;
    const cudaError_t e = dispatchDType(dt, [&](auto tag) {
        cudaLaunchAttribute attr = clusterAttribute(unsigned(p.cluster));
        const cudaLaunchConfig_t cfg = launchConfig(unsigned(p.cluster), kThreads, smemOf(g, p), &attr, 1, nullptr);
        int clusters = 0;
        const cudaError_t err = cudaOccupancyMaxActiveClusters(&clusters, kernelOf<decltype(tag)>(g, p), &cfg);
        return err != cudaSuccess ? err : clusters > 0 ? cudaSuccess : cudaErrorInvalidConfiguration;
    });
    return succeeded(e);
}

// Whether fused plan p can launch on the current GPU as planned: its CTAs hold whole segments, one of its
// clusters fits, or (a grid-wide barrier) all of its CTAs fit at once.
bool launchable(DType dt, const Geometry& g, const GroupNormResidentPlan& p) {
    return local(g, p) || (p.cluster ? clustersFit(dt, g, p) : coResident(dt, g, p));
}

// Whether plan p's cluster fits the shape of geometry g (its widest packs) and this GPU runs such clusters:
// each segment exactly `cluster` ranges, a fused plan of the widest packs.
bool clusterOk(DType dt, const Geometry& g, const GroupNormResidentPlan& p) {
    return p.fused && !p.narrow && p.cluster >= 2 && p.cluster <= kClusterCtas && p.per * p.cluster == g.segLen &&
           groupNormDevice().maxCluster >= p.cluster;
}

bool capturing(cudaStream_t stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    return succeeded(cudaStreamIsCapturing(stream, &status)) && status != cudaStreamCaptureStatusNone;
}

} // namespace

GroupNormResidentDevice groupNormResidentDevice() noexcept {
    return perDevice<GroupNormResidentDevice>(queryDevice);
}

bool groupNormChannelsLastOk(DType dt, int64_t channels, int64_t channelStride) {
    const int64_t cs = channelStride ? channelStride : channels;
    return channels >= 1 && cs >= channels && cs / (cs % vecOf(dt) == 0 ? vecOf(dt) : 1) <= kThreads;
}

// Dynamic shared memory each of dev.ctasPerSm CTAs of an SM may use: the opt-in (with the static part)
// shared between them, less each one's static part and, past the first, the driver's reserve per CTA.
int64_t ctaSmem(const GroupNormResidentDevice& dev) {
    constexpr int64_t kDriverReserve = 1024;
    const int64_t k = dev.ctasPerSm;
    return (dev.smemPerBlock + kStaticSmem) / k - kStaticSmem - (k > 1 ? kDriverReserve : 0);
}

// Units of a fused CTA's range of `per` that its shared memory holds beside its other arrays (a multiple
// of g.align, at most per); -1: not even those arrays fit.
int64_t stagedUnits(const Geometry& g, int64_t per, const GroupNormResidentDevice& dev) {
    const int64_t free = ctaSmem(dev) - auxSmem(g, per) - 64; // 64: the staged copies' rounding
    if (free < 0) return -1;
    const int64_t fits = free / g.unitSmem / g.align * g.align;
    return fits < per ? fits : per;
}

GroupNormResidentPlan groupNormResidentPlan(DType dt, const GroupNormShape& s, bool aligned, const GroupNormResidentDevice& dev) {
    if (!shapeOk(s) || s.n == 0 || s.spatial == 0) return {};
    const Geometry g = geometry(dt, s, vecFor(dt, s, aligned));
    if (!clThreadsOk(g)) return {};
    const int64_t needed = ceilDiv(g.units, minUnits(g, dt));
    if (dev.sms > 0 && dev.ctasPerSm >= 1) {
        const bool narrow = dev.ctasPerSm >= 2 && narrowOk(dt, s, aligned);
        const int64_t w = narrow || dev.windows == 1 ? 1
                          : dev.windows == 0 ? windowsFor(dt, s, aligned)
                          : windowsOk(dt, s, aligned, dev.windows) ? dev.windows : 1;
        const Geometry f = windowed(geometryOf(dt, s, aligned, narrow), w);
        const int64_t all = int64_t(dev.sms) * dev.ctasPerSm, ctas = (all < kMaxCtas ? all : kMaxCtas) / w;
        const int64_t want = ceilDiv(f.units, minUnits(f, dt)); // ranges of each window
        GroupNormResidentPlan p = split(f, want < ctas ? want : ctas > 0 ? ctas : 1, 0);
        p.grid = int32_t(p.grid * w);
        p.resident = stagedUnits(f, p.per, dev);
        if (p.resident >= 0) {
            p.fused = true;
            p.narrow = narrow;
            return p;
        }
    }
    const GroupNormResidentPlan p = split(g, needed < kTwoLaunchCtas ? needed : kTwoLaunchCtas, 0);
    return auxSmem(g, p.per) <= kTwoLaunchSmem ? p : GroupNormResidentPlan{};
}

GroupNormResidentPlan groupNormWholeSegmentPlan(DType dt, const GroupNormShape& s, bool aligned,
                                                const GroupNormResidentDevice& dev) {
    if (!shapeOk(s) || s.n == 0 || s.spatial == 0 || dev.smemPerBlock < 1) return {};
    const Geometry whole = geometry(dt, s, vecFor(dt, s, aligned));
    if (!clThreadsOk(whole)) return {};
    const Geometry g = windowed(whole, windowsFor(dt, s, aligned));
    GroupNormResidentPlan p;
    p.per = ceilDiv(g.units / g.segLen, kMaxCtas / g.windows) * g.segLen; // a multiple of g.align: segLen is
    p.grid = int32_t(ceilDiv(g.units, p.per) * g.windows);
    p.fused = true;
    GroupNormResidentDevice one = dev;
    one.ctasPerSm = 1;
    p.resident = stagedUnits(g, p.per, one);
    return p.resident >= 0 ? p : GroupNormResidentPlan{};
}

GroupNormResidentPlan groupNormClusterPlan(DType dt, const GroupNormShape& s, bool aligned,
                                           const GroupNormResidentDevice& dev, int64_t ctas) {
    if (!shapeOk(s) || s.n == 0 || s.spatial == 0 || dev.smemPerBlock < 1 || ctas < 2 || ctas > kClusterCtas) return {};
    const Geometry whole = geometry(dt, s, vecFor(dt, s, aligned));
    if (!clThreadsOk(whole)) return {};
    const Geometry g = windowed(whole, whole.cl ? windowsFor(dt, s, aligned) : 1);
    const int64_t clusters = g.units / g.segLen * g.windows;
    if (g.segLen % (ctas * g.align) || clusters > kMaxCtas / ctas) return {};
    GroupNormResidentPlan p;
    p.per = g.segLen / ctas;
    p.grid = int32_t(clusters * ctas);
    p.fused = true;
    p.cluster = int32_t(ctas);
    GroupNormResidentDevice one = dev;
    one.ctasPerSm = 1;
    p.resident = stagedUnits(g, p.per, one);
    return p.resident >= 0 ? p : GroupNormResidentPlan{};
}

// Fused resident against split, channels-first, 1-2 samples, FP16 and BF16: GroupNorm from 5 MB 1.03-1.27x
// (every such point; H100 run 3, benchmarks/group_norm/h100_v3.json), GroupNorm+SiLU from 5 MB 1.07-1.23x
// (every such point; run 13, h100_v13.json); below 5 MB 0.56-1.0x: the split design there. On 8 samples,
// 16-bit, runs 13-15 (h100_v13-15.json), GroupNorm / +SiLU: 1.11-1.23x at 8x320x64x64 (80 KB groups, 21 MB:
// every run, op and dtype), 0.93-1.04x with 40-60 KB groups (8x640x32x32, 8x960x32x32), 0.94-0.99x at
// 8x640x64x64 (160 KB, 42 MB): the resident design for 3-8 samples of 64-128 KB groups up to 32 MB. GroupNorm+SiLU
// in FP32, not measured against the split design since the SiLU's run-10 form: from 32 MB, as run 3 found.
bool groupNormResidentFirst(DType dt, const GroupNormShape& s, GroupNormAct act, bool clusters) {
    if (!shapeOk(s) || s.layout != GroupNormLayout::kChannelsFirst || s.skip != GroupNormSkip::kNone) return false;
    if (act != GroupNormAct::kNone && act != GroupNormAct::kSilu) return false;
    if (groupNormWholeSegmentsFirst(dt, s) || (clusters && groupNormClusterCtas(dt, s))) return true;
    const int64_t eb = elemBytes(dt), elems = s.n * s.channels * s.spatial, group = s.channels / s.groups * s.spatial;
    if (eb == 2 && s.n >= 3 && s.n <= 8)
        return group >= 32 * 1024 && group < 64 * 1024 && elems <= int64_t(16) << 20; // 64-128 KB, 32 MB
    const bool fromFive = act == GroupNormAct::kNone || eb == 2;
    return s.n >= 1 && s.n <= 2 && elems >= (fromFive ? int64_t(5) << 20 : int64_t(32) << 20) / eb;
}

// H100 run 7, whole groups per CTA against the split design, channels-first, FP16/BF16, GroupNorm / +SiLU
// (benchmarks/group_norm/h100_v7_quick.md, then h100_v7.json): 2 samples, 5 KB groups 1.46x / 1.50x, 20 KB
// 1.29x / 1.23x, 40 KB 1.03x / 0.93x, 80 KB level; 8 samples, 5-30 KB groups 1.22-1.46x / 1.16-1.38x
// (the full run, forced beside the split design's pick; 1 sample: as 2). Run 16 (h100_v16.json), 4 samples of
// 40-60 KB groups (4x640x32x32, 4x960x32x32): 1.29-1.46x the pick then, 1.00-1.11x the cluster plan.
bool groupNormWholeSegmentsFirst(DType dt, const GroupNormShape& s) {
    if (!shapeOk(s) || s.layout != GroupNormLayout::kChannelsFirst || s.skip != GroupNormSkip::kNone) return false;
    const int64_t bytes = groupBytes(dt, s);
    if (elemBytes(dt) == 2 && s.n >= 3 && s.n <= 4 && bytes <= 64 * 1024) return true;
    return s.n >= 1 && s.n <= 8 && s.spatial > 0 && bytes <= 32 * 1024;
}

// H100 run 16 (h100_v16.json), channels-first, FP16/BF16, GroupNorm / +SiLU, each plan forced beside the pick in
// one process: each group a cluster of 2 CTAs 1.04-1.42x the pick on 2-4 samples of 40-320 KB groups (2x320x64x64
// 1.17-1.19x, 4x640x64x64 1.34-1.42x, 2x320x128x128 1.04-1.05x) and 1.21-1.26x on 8 samples of 160 KB
// (8x640x64x64); 0.95-1.02x on 8 samples of 40-80 KB, 0.49-1.01x with groups of 20 KB or less, on one sample
// 0.61-0.98x but at 30-60 KB (0.98-1.12x; the VAE decoder's groups of 0.5-8 MB 0.61-0.81x, in clusters of 8
// 0.79-0.90x); clusters of 4 and 8 slower than 2 at every shape taken.
int64_t groupNormClusterCtas(DType dt, const GroupNormShape& s) {
    if (!shapeOk(s) || s.layout != GroupNormLayout::kChannelsFirst || s.skip != GroupNormSkip::kNone ||
        elemBytes(dt) != 2 || groupNormWholeSegmentsFirst(dt, s))
        return 0;
    const int64_t bytes = groupBytes(dt, s);
    const bool pays = (s.n >= 2 && s.n <= 4 && bytes >= 40 * 1024) || (s.n >= 5 && s.n <= 8 && bytes >= 128 * 1024);
    return pays ? 2 : 0;
}

// H100 runs 13 and 14 (benchmarks/group_norm/h100_v13.json, h100_v14.json: the same ratios in both),
// channels-last, FP16/BF16, no skip, GroupNorm / +SiLU, each plan forced beside the fused one: whole groups per
// CTA (a sample's window of them) 1.15-1.42x where a window is 32 KB or less and the grid one CTA per SM at
// most (1-2 samples of 1280-2560 channels at 8x8 and 16x16; on 8 samples, 256 CTAs: 0.74-0.77x; larger windows
// 0.31-0.98x); else the fused plan cut into channel windows on one sample up to 5 MB, 1.02-1.23x at every such
// shape, and with windows of 120 channels or more up to 8 MB, 1.02-1.13x at every such shape (2 and 8 samples of
// 960-1920 channels); with narrower windows on 2 and 8 samples (no whole-group plan) 0.70-1.02x, on one sample
// from 10 MB 0.84-0.95x. None (grid 0) elsewhere and in FP32 (not measured).
namespace {
GroupNormResidentPlan channelsLastPick(DType dt, const GroupNormShape& s, bool aligned, const GroupNormResidentDevice& dev) {
    if (!shapeOk(s) || s.layout != GroupNormLayout::kChannelsLast || s.skip != GroupNormSkip::kNone || elemBytes(dt) != 2 ||
        dev.sms < 1)
        return {};
    const int64_t w = windowsFor(dt, s, aligned);
    if (w < 2) return {};
    const GroupNormResidentPlan whole = groupNormWholeSegmentPlan(dt, s, aligned, dev);
    if (whole.fused && staged(whole) && whole.grid <= dev.sms && s.spatial * (s.channels / w) * elemBytes(dt) <= 32 * 1024)
        return whole;
    const int64_t bytes = s.n * s.channels * s.spatial * elemBytes(dt);
    const bool wide = s.channels / w * elemBytes(dt) >= 240; // a window of 120 16-bit channels or more
    if (!(wide && bytes <= int64_t(8) << 20) && !(s.n == 1 && bytes <= int64_t(5) << 20)) return {};
    GroupNormResidentDevice windows = dev;
    windows.windows = 0;
    return groupNormResidentPlan(dt, s, aligned, windows);
}
} // namespace

GroupNormResidentPlan groupNormResidentPick(DType dt, const GroupNormShape& s, bool aligned, const GroupNormResidentDevice& dev) {
    if (groupNormWholeSegmentsFirst(dt, s)) {
        const GroupNormResidentPlan w = groupNormWholeSegmentPlan(dt, s, aligned, dev);
        if (w.fused && staged(w)) return w;
    }
    if (const int64_t k = groupNormClusterCtas(dt, s); k && k <= dev.maxCluster) {
        const GroupNormResidentPlan c = groupNormClusterPlan(dt, s, aligned, dev, k);
        if (c.fused && staged(c)) return c;
    }
    const GroupNormResidentPlan c = channelsLastPick(dt, s, aligned, dev);
    return c.fused ? c : groupNormResidentPlan(dt, s, aligned, dev);
}

GroupNormResidentPlan groupNormResidentConfigure(DType dt, const GroupNormShape& s, bool aligned) noexcept {
    try {
        const GroupNormResidentPlan p = groupNormResidentPick(dt, s, aligned, groupNormResidentDevice());
        if (!p.fused) return p;
        const Geometry g = geometryOfPlan(geometry(dt, s, vecFor(dt, s, aligned)), dt, s, aligned, p);
        return launchable(dt, g, p) ? p : groupNormResidentPlan(dt, s, aligned);
    } catch (...) {
        return {};
    }
}

// Partials: (CTAs + segments) x width float2 (width: groups channels-last, else 1), then one shift per
// group; both 256-byte aligned.
size_t groupNormResidentWorkspaceSize(int64_t n, int64_t groups, GroupNormLayout layout) {
    if (n < 1 || groups < 1) return 0;
    const size_t width = layout == GroupNormLayout::kChannelsLast ? size_t(groups) : 1, total = size_t(n) * size_t(groups);
    return roundUp((size_t(kMaxCtas) * width + total) * sizeof(float2)) + roundUp(total * sizeof(float));
}

cudaError_t launchGroupNormResident(DType dt, const GroupNormArgs& args, cudaStream_t stream, GroupNormResidentPlan* ran) {
    GroupNormShape s;
    s.n = args.n, s.channels = args.channels, s.spatial = args.spatial, s.groups = args.groups;
    s.layout = args.layout, s.channelStride = args.channelStride, s.skip = args.skipMode;
    if (!shapeOk(s) || !(args.epsilon >= 0.f)) return cudaErrorInvalidValue;
    if (args.act != GroupNormAct::kNone && args.act != GroupNormAct::kSilu) return cudaErrorInvalidValue;
    if (dt != DType::kFloat32 && dt != DType::kFloat16 && dt != DType::kBFloat16) return cudaErrorInvalidValue;
    if (s.n == 0 || s.spatial == 0) return cudaSuccess;
    if (!args.x || !args.y || !args.gamma || (s.skip != GroupNormSkip::kNone && !args.skip)) return cudaErrorInvalidValue;
    if (!args.workspace || args.workspaceSize < groupNormResidentWorkspaceSize(s.n, s.groups, s.layout) || !aligned16(args.workspace))
        return cudaErrorInvalidValue;
    const bool aligned = aligned16(args.x) && aligned16(args.y) && (!args.sum || aligned16(args.sum)) &&
                         (s.skip != GroupNormSkip::kFull || aligned16(args.skip));
    const Geometry g = geometry(dt, s, vecFor(dt, s, aligned));
    if (!clThreadsOk(g)) return cudaErrorInvalidValue;
    const GroupNormResidentPlan twoLaunches = groupNormResidentPlan(dt, s, aligned);
    if (twoLaunches.grid < 1) return cudaErrorInvalidValue; // segments too small for a CTA's shared arrays
    // The configured plan where it still fits this shape and pack width, else two launches.
    const GroupNormResidentPlan& c = args.resident;
    const int64_t windows = windowsOf(g, c);
    const bool planOk = c.grid >= 1 && c.grid <= kMaxCtas && c.per >= 1 && c.per % g.align == 0 &&
                        c.grid == ceilDiv(g.units, c.per) * windows && c.resident >= 0 && c.resident <= c.per &&
                        (c.resident == 0 || c.fused) && c.resident * g.unitElems < kMaxOffset &&
                        (!c.narrow || (c.fused && narrowOk(dt, s, aligned))) &&
                        (windows == 1 || (c.fused && !c.narrow && windowsOk(dt, s, aligned, windows))) &&
                        (c.cluster == 0 || clusterOk(dt, g, c));
    GroupNormResidentPlan plan = planOk ? c : twoLaunches;
    const size_t partialBytes = roundUp((size_t(kMaxCtas) * size_t(g.width) + size_t(s.n * s.groups)) * sizeof(float2));
    return dispatchDType(dt, [&](auto tag) -> cudaError_t {
        using T = decltype(tag);
        Gn<T> a{};
        a.x = static_cast<const T*>(args.x), a.skip = static_cast<const T*>(args.skip);
        a.bias = args.bias, a.gamma = args.gamma, a.beta = args.beta;
        a.y = static_cast<T*>(args.y), a.sum = static_cast<T*>(args.sum);
        a.slots = static_cast<float2*>(args.workspace);
        a.slotStride = kMaxCtas + g.units / g.segLen; // CTAs + segments
        a.shifts = reinterpret_cast<float*>(static_cast<char*>(args.workspace) + partialBytes);
        a.units = g.units, a.segLen = g.segLen;
        a.spatialDiv = FastDiv(uint32_t(s.spatial));
        a.groupsDiv = FastDiv(uint32_t(s.groups));
        a.cpgDiv = FastDiv(uint32_t(s.channels / s.groups));
        a.perDivOk = g.units < kMaxOffset;
        a.weights16 = aligned16(args.gamma) && (!args.beta || aligned16(args.beta));
        a.segDiv = FastDiv(uint32_t(a.perDivOk ? g.segLen : 1));
        a.spatial = int32_t(s.spatial), a.cpg = int32_t(s.channels / s.groups), a.cstride = int32_t(g.cs);
        a.eps = args.epsilon, a.invCount = float(1.0 / double(s.channels / s.groups * s.spatial));
        a.skipMode = s.skip, a.act = args.act;
        const auto run = [&](const GroupNormResidentPlan& p) {
            const Geometry pg = geometryOfPlan(g, dt, s, aligned, p); // g: the widest packs
            a.windows = int32_t(pg.windows), a.lstride = int32_t(pg.unitElems);
            a.channels = int32_t(s.channels / pg.windows), a.groups = int32_t(s.groups / pg.windows);
            a.widthDiv = FastDiv(uint32_t(pg.width));
            a.packs = int32_t(pg.packs), a.rows = int32_t(pg.rows);
            a.packsDiv = FastDiv(uint32_t(pg.packs > 0 ? pg.packs : 1));
            a.split = int32_t(a.channels < kThreads ? (kThreads / a.channels < pg.rows ? kThreads / a.channels : pg.rows) : 1);
            a.windowsDiv = FastDiv(uint32_t(pg.windows)), a.channelsDiv = FastDiv(uint32_t(a.channels));
            a.per = p.per, a.resident = p.resident, a.maxPieces = int32_t(maxPieces(pg, p.per));
            a.perDiv = FastDiv(uint32_t(a.perDivOk ? p.per : 1));
            a.local = local(pg, p);
            a.cluster = p.cluster;
            const GroupNormInRegisters k = inRegistersOf(pg, dt, s, p, plain(a), groupNormResidentDevice());
            return k.packs ? launchInRegisters(pg, a, k, stream) : launchWith(pg, a, p, smemOf(pg, p), stream);
        };
        // A plan made for another device or context (an MPS share) may not fit here: a capture is checked
        // first (a refused launch would invalidate it), otherwise the refusal answers.
        if (plan.fused) {
            const Geometry pg = geometryOfPlan(g, dt, s, aligned, plan);
            if (capturing(stream) && !launchable(dt, pg, plan)) plan = twoLaunches;
        }
        cudaError_t e = run(plan);
        if (plan.fused && !succeeded(e)) { // succeeded() clears the refusal: the caller's next check does not see it
            plan = twoLaunches;
            e = run(plan);
        }
        if (e == cudaSuccess && ran) *ran = plan;
        return e;
    });
}

} // namespace trtp
