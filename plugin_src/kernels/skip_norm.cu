// s = x (+ skip) (+ bias); y = norm(s) * gamma (+ beta). FP32 statistics from registers: each thread
// takes the mean and centred sum of squares of its own elements, then one merged (Chan) reduction,
// as accurate as two passes; each element is read once and written once.
//   small rows: one warp per row;  rows up to 16384+: one block per row, row held in registers;
//   aligned: persistent blocks with the next row staged in shared memory by cp.async and the
//   weights copied to shared memory once (when they fit);
//   larger rows: one block per row, three passes over global memory (correct, not fast).
// Each path takes 16-byte packs when every pointer is aligned and hidden divides, else one element.
// y and sum may alias x or skip: every thread reads its elements before a reduction that
// precedes all writes of the row.
#include "common.cuh"
#include "skip_norm.h"

namespace trtp {
namespace {

using namespace detail;

constexpr int kWarpRowsPerBlock = 4;
constexpr int kMaxBlock = 512;
constexpr int kFallbackThreads = 512;

template <class T> struct Row {
    const T* x;
    const T* skip;
    const float* bias;
    const float* gamma;
    const float* beta;
    T* y;
    T* sum;
    int64_t rows, hidden;
    float eps;
};

// Keeps the compiler from hoisting later weight loads over earlier stores (register pressure).
__device__ __forceinline__ void orderMemory() { asm volatile("" ::: "memory"); }

struct Stat {
    float n, mean, m2; // count, mean, sum of squared deviations
};

__device__ __forceinline__ Stat merge(const Stat& a, const Stat& b) {
    const float n = a.n + b.n;
    if (n == 0.f) return a;
    const float d = b.mean - a.mean, f = __fdividef(b.n, n);
    return {n, fmaf(d, f, a.mean), a.m2 + b.m2 + d * d * a.n * f};
}

__device__ __forceinline__ Stat warpMerge(Stat s) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const Stat b{__shfl_xor_sync(0xffffffffu, s.n, o), __shfl_xor_sync(0xffffffffu, s.mean, o),
                     __shfl_xor_sync(0xffffffffu, s.m2, o)};
        s = merge(s, b);
    }
    return s;
}

// Block-wide merge; every thread gets the result (each warp merges the per-warp partials itself,
// so one barrier). `red` holds 3 floats per warp (96) and must not be reused before all return.
__device__ __forceinline__ Stat blockMerge(Stat s, float* red) {
    s = warpMerge(s);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nwarps = blockDim.x >> 5;
    if (lane == 0) red[warp] = s.n, red[32 + warp] = s.mean, red[64 + warp] = s.m2;
    __syncthreads();
    return warpMerge(lane < nwarps ? Stat{red[lane], red[32 + lane], red[64 + lane]} : Stat{0.f, 0.f, 0.f});
}

template <class T, int VEC, int NV> struct RowPacks {
    Pack<T, VEC> x[NV], skip[NV];
};

// This thread's packs of one row: pack j covers columns (j * tpr + t) * VEC ...
template <class T, int VEC, int NV>
__device__ __forceinline__ void loadPacks(const Row<T>& a, int64_t row, int t, int tpr, RowPacks<T, VEC, NV>& p) {
    const int64_t base = row * a.hidden;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        const int c = (j * tpr + t) * VEC;
        if (c < int(a.hidden)) {
            p.x[j] = load<T, VEC>(a.x + base + c);
            if (a.skip) p.skip[j] = load<T, VEC>(a.skip + base + c);
        }
    }
}

__device__ __forceinline__ void cpAsync16(void* dst, const void* src) {
    const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void cpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void cpAsyncWaitAllButOne() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }

// Normalise one row from this thread's packs: NV packs of VEC elements, `tpr` threads per row.
// WARP: the row group is one warp; else the whole block. Columns fit in int (hidden <= 2^31 / 32).
// gamma/beta/bias as the row kernels read them: global memory, or a block's shared-memory copy (SW).
struct WeightPtrs {
    const float* gamma;
    const float* beta;
    const float* bias;
};

template <int VEC, bool SW> __device__ __forceinline__ void loadW(const float* p, float (&w)[VEC]) {
    if constexpr (SW) {
#pragma unroll
        for (int i = 0; i < VEC; i += 4) {
            const float4 q = *reinterpret_cast<const float4*>(p + i);
            w[i] = q.x, w[i + 1] = q.y, w[i + 2] = q.z, w[i + 3] = q.w;
        }
    } else {
        loadWeights<VEC>(p, w);
    }
}

template <class T, int VEC, int NV, bool WARP, Norm NORM, bool SW = false>
__device__ __forceinline__ void normRow(const Row<T>& a, int64_t row, int t, int tpr, const RowPacks<T, VEC, NV>& pk,
                                        float* red, const WeightPtrs& w) {
    const int64_t base = row * a.hidden;
    const int hidden = int(a.hidden);
    const auto& xp = pk.x;
    const auto& sp = pk.skip;
    const bool skip = a.skip != nullptr;
    float s[NV][VEC];
    float acc = 0.f;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        const int c = (j * tpr + t) * VEC;
        if (c < hidden) {
            unpack(xp[j], s[j]);
            if (skip) {
                float k[VEC];
                unpack(sp[j], k);
#pragma unroll
                for (int i = 0; i < VEC; ++i) s[j][i] += k[i];
            }
            if (w.bias) {
                float b[VEC];
                loadW<VEC, SW>(w.bias + c, b);
#pragma unroll
                for (int i = 0; i < VEC; ++i) s[j][i] += b[i];
            }
            if (a.sum) store<T, VEC>(a.sum + base + c, s[j]);
#pragma unroll
            for (int i = 0; i < VEC; ++i) acc += NORM == Norm::kLayer ? s[j][i] : s[j][i] * s[j][i];
        } else {
#pragma unroll
            for (int i = 0; i < VEC; ++i) s[j][i] = 0.f;
        }
    }
    float mean = 0.f, rstd;
    if constexpr (NORM == Norm::kLayer) {
        // This thread's count, mean and centred sum of squares from registers, then one merged
        // reduction (Chan et al.): as accurate as two passes, with one round of shuffles/barrier.
        int n = 0;
#pragma unroll
        for (int j = 0; j < NV; ++j) n += (j * tpr + t) * VEC < hidden ? VEC : 0;
        const float m = n ? acc / float(n) : 0.f;
        float m2 = 0.f;
#pragma unroll
        for (int j = 0; j < NV; ++j) {
            if ((j * tpr + t) * VEC < hidden) {
#pragma unroll
                for (int i = 0; i < VEC; ++i) {
                    const float d = s[j][i] - m;
                    m2 = fmaf(d, d, m2);
                }
            }
        }
        Stat st{float(n), m, m2};
        st = WARP ? warpMerge(st) : blockMerge(st, red);
        mean = st.mean;
        rstd = rsqrtf(st.m2 / float(hidden) + a.eps);
    } else {
        rstd = rsqrtf((WARP ? warpSum(acc) : blockSum(acc, red)) / float(hidden) + a.eps);
    }
    T* y = a.y + base;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        const int c = (j * tpr + t) * VEC;
        if (c < hidden) {
            float g[VEC], o[VEC];
            loadW<VEC, SW>(w.gamma + c, g);
#pragma unroll
            for (int i = 0; i < VEC; ++i) o[i] = (s[j][i] - mean) * rstd * g[i];
            if (w.beta) {
                float b[VEC];
                loadW<VEC, SW>(w.beta + c, b);
#pragma unroll
                for (int i = 0; i < VEC; ++i) o[i] += b[i];
            }
            store<T, VEC>(y + c, o);
        }
        orderMemory();
    }
}

template <class T, int VEC, int NV, Norm NORM>
__global__ void __launch_bounds__(32 * kWarpRowsPerBlock) warpRowKernel(Row<T> a) {
    const int lane = threadIdx.x & 31;
    for (int64_t row = int64_t(blockIdx.x) * kWarpRowsPerBlock + (threadIdx.x >> 5); row < a.rows;
         row += int64_t(gridDim.x) * kWarpRowsPerBlock) {
        RowPacks<T, VEC, NV> pk;
        loadPacks(a, row, lane, 32, pk);
        normRow<T, VEC, NV, true, NORM>(a, row, lane, 32, pk, nullptr, WeightPtrs{a.gamma, a.beta, a.bias});
    }
}

template <class T, int VEC, int NV, Norm NORM> __global__ void __launch_bounds__(kMaxBlock) blockRowKernel(Row<T> a) {
    __shared__ float red[96];
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        RowPacks<T, VEC, NV> pk;
        loadPacks(a, row, threadIdx.x, blockDim.x, pk);
        normRow<T, VEC, NV, false, NORM>(a, row, threadIdx.x, blockDim.x, pk, red, WeightPtrs{a.gamma, a.beta, a.bias});
        __syncthreads(); // red is rewritten by the next row
    }
}

// Persistent row groups (a warp or the whole block per row) with the next row in flight: each thread
// copies its own 16-byte packs of its group's next row into shared memory (cp.async, 2 stages) while
// it normalises the current one, so HBM never idles during reductions. A thread reads only the slots
// it filled itself, so the copies need no barrier; a stage is refilled only after this thread
// consumed it (program order). SW: gamma/beta/bias copied to shared memory once per block, so the
// per-row weight reads are short shared-memory loads instead of L1/L2 round trips.
template <class T, int VEC, int NV, bool WARP, bool SW, Norm NORM>
__global__ void __launch_bounds__(kMaxBlock) stagedRowKernel(Row<T> a) {
    extern __shared__ uint4 smem[]; // [SW: weights][groups][2 stages][x, skip][NV][tpr] packs
    __shared__ float red[96];
    using P = Pack<T, VEC>;
    const int hidden = int(a.hidden);
    const int tpr = WARP ? 32 : blockDim.x, t = WARP ? threadIdx.x & 31 : threadIdx.x;
    const int groups = WARP ? blockDim.x >> 5 : 1, g = WARP ? threadIdx.x >> 5 : 0;
    const int nin = a.skip ? 2 : 1;
    WeightPtrs w{a.gamma, a.beta, a.bias};
    P* stage = reinterpret_cast<P*>(smem);
    if constexpr (SW) {
        float* ws = reinterpret_cast<float*>(smem);
        const float* src[3] = {a.gamma, a.beta, a.bias};
        float* dst[3] = {};
        int nw = 0;
#pragma unroll
        for (int k = 0; k < 3; ++k)
            if (src[k]) dst[k] = ws + nw++ * hidden;
#pragma unroll
        for (int k = 0; k < 3; ++k)
            if (src[k])
                for (int i = threadIdx.x * 4; i < hidden; i += blockDim.x * 4)
                    *reinterpret_cast<float4*>(dst[k] + i) = __ldg(reinterpret_cast<const float4*>(src[k] + i));
        w = WeightPtrs{dst[0], dst[1], dst[2]};
        stage = reinterpret_cast<P*>(ws + nw * hidden); // hidden % 4 == 0: stays 16-byte aligned
        __syncthreads();
    }
    auto slot = [&](int st, int in, int j) { return stage + (((g * 2 + st) * nin + in) * NV + j) * tpr + t; };
    auto fetch = [&](int64_t row, int st) {
        const int64_t base = row * a.hidden;
#pragma unroll
        for (int j = 0; j < NV; ++j) {
            const int c = (j * tpr + t) * VEC;
            if (c < hidden) {
                cpAsync16(slot(st, 0, j), a.x + base + c);
                if (a.skip) cpAsync16(slot(st, 1, j), a.skip + base + c);
            }
        }
    };
    const int64_t step = int64_t(gridDim.x) * groups;
    int64_t row = int64_t(blockIdx.x) * groups + g;
    if (row < a.rows) fetch(row, 0);
    cpAsyncCommit();
    for (int st = 0; row < a.rows; row += step, st ^= 1) {
        if (row + step < a.rows) fetch(row + step, st ^ 1);
        cpAsyncCommit();
        cpAsyncWaitAllButOne(); // this row's group has landed
        RowPacks<T, VEC, NV> pk;
#pragma unroll
        for (int j = 0; j < NV; ++j) {
            if ((j * tpr + t) * VEC < hidden) {
                pk.x[j] = *slot(st, 0, j);
                if (a.skip) pk.skip[j] = *slot(st, 1, j);
            }
        }
        normRow<T, VEC, NV, WARP, NORM, SW>(a, row, t, tpr, pk, red, w);
        if constexpr (!WARP) __syncthreads(); // red is rewritten by the next row
    }
}

// Any hidden: statistics from global memory (the row stays in L1/L2 between passes).
template <class T, int VEC, Norm NORM> __global__ void __launch_bounds__(kFallbackThreads) fallbackKernel(Row<T> a) {
    __shared__ float red0[32], red1[32];
    const float invH = 1.f / float(a.hidden);
    auto sumAt = [&](int64_t off, float (&s)[VEC]) {
        unpack(load<T, VEC>(a.x + off), s);
        if (a.skip) {
            float k[VEC];
            unpack(load<T, VEC>(a.skip + off), k);
            for (int i = 0; i < VEC; ++i) s[i] += k[i];
        }
    };
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        const int64_t base = row * a.hidden;
        float acc = 0.f;
        for (int64_t c = int64_t(threadIdx.x) * VEC; c < a.hidden; c += int64_t(blockDim.x) * VEC) {
            float s[VEC], b[VEC];
            sumAt(base + c, s);
            if (a.bias) loadWeights<VEC>(a.bias + c, b);
            for (int i = 0; i < VEC; ++i) {
                const float v = s[i] + (a.bias ? b[i] : 0.f);
                acc += NORM == Norm::kLayer ? v : v * v;
            }
        }
        float mean = 0.f;
        if constexpr (NORM == Norm::kLayer) {
            mean = blockSum(acc, red0) * invH;
            acc = 0.f;
            for (int64_t c = int64_t(threadIdx.x) * VEC; c < a.hidden; c += int64_t(blockDim.x) * VEC) {
                float s[VEC], b[VEC];
                sumAt(base + c, s);
                if (a.bias) loadWeights<VEC>(a.bias + c, b);
                for (int i = 0; i < VEC; ++i) {
                    const float d = s[i] + (a.bias ? b[i] : 0.f) - mean;
                    acc = fmaf(d, d, acc);
                }
            }
        }
        const float rstd = rsqrtf(blockSum(acc, red1) * invH + a.eps);
        for (int64_t c = int64_t(threadIdx.x) * VEC; c < a.hidden; c += int64_t(blockDim.x) * VEC) {
            float s[VEC], g[VEC], o[VEC];
            sumAt(base + c, s);
            if (a.bias) {
                float b[VEC];
                loadWeights<VEC>(a.bias + c, b);
                for (int i = 0; i < VEC; ++i) s[i] += b[i];
            }
            loadWeights<VEC>(a.gamma + c, g);
            for (int i = 0; i < VEC; ++i) o[i] = (s[i] - mean) * rstd * g[i];
            if (a.beta) {
                float b[VEC];
                loadWeights<VEC>(a.beta + c, b);
                for (int i = 0; i < VEC; ++i) o[i] += b[i];
            }
            if (a.sum) store<T, VEC>(a.sum + base + c, s);
            store<T, VEC>(a.y + base + c, o);
        }
        __syncthreads();
    }
}

constexpr int64_t kMaxGrid = int64_t(1) << 30;

inline unsigned gridFor(int64_t blocks) { return unsigned(blocks < kMaxGrid ? blocks : kMaxGrid); }

constexpr int kMaxSmem = 200 * 1024; // at most this much dynamic shared memory per block

// Opt-in shared memory per block of the current device (227 KB on sm_90, 99 KB on sm_86/89), capped.
inline cudaError_t smemCap(int& cap) {
    static int cache[128] = {};
    int dev = 0;
    if (cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) return e;
    if (dev >= 0 && dev < 128 && cache[dev] > 0) return cap = cache[dev], cudaSuccess;
    int optin = 0;
    if (cudaError_t e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev); e != cudaSuccess)
        return e;
    cap = (optin < kMaxSmem ? optin : kMaxSmem) - 1024; // room for the static reduction buffer
    if (dev >= 0 && dev < 128) cache[dev] = cap;
    return cudaSuccess;
}

// Launch the staged kernel as a persistent grid; returns false (nothing launched) if it does not fit.
template <class T, int VEC, int NV, bool WARP, Norm NORM>
bool launchStaged(const Row<T>& a, int threads, cudaStream_t s, cudaError_t& err) {
    const int groups = WARP ? threads / 32 : 1, tpr = WARP ? 32 : threads;
    const int stageBytes = groups * 2 * (a.skip ? 2 : 1) * NV * tpr * 16;
    const int weightBytes = int(a.hidden) * 4 * (1 + (a.beta != nullptr) + (a.bias != nullptr));
    int cap = 0;
    if ((err = smemCap(cap)) != cudaSuccess) return true;
    const bool sw = stageBytes + weightBytes <= cap;
    if (!sw && stageBytes > cap) return false;
    auto kernel = sw ? stagedRowKernel<T, VEC, NV, WARP, true, NORM> : stagedRowKernel<T, VEC, NV, WARP, false, NORM>;
    const int smemBytes = stageBytes + (sw ? weightBytes : 0);
    int perSm = 0, sms = 0, dev = 0;
    // Raise the kernel's dynamic shared-memory limit to the device cap once per device (first
    // launch; a benign race sets the same value), so later launches, captured ones too, need no call.
    static int raised[2][128] = {};
    if ((err = cudaGetDevice(&dev)) != cudaSuccess) return true;
    int* flag = dev >= 0 && dev < 128 ? &raised[sw][dev] : nullptr;
    if (!flag || !*flag) {
        if ((err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, cap)) != cudaSuccess)
            return true;
        if (flag) *flag = 1;
    }
    if ((err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, threads, smemBytes)) != cudaSuccess)
        return true;
    if ((err = smCount(sms)) != cudaSuccess) return true;
    const int64_t need = (a.rows + groups - 1) / groups, full = int64_t(sms) * (perSm > 0 ? perSm : 1);
    kernel<<<gridFor(need < full ? need : full), threads, smemBytes, s>>>(a);
    err = launchStatus();
    return true;
}

// Warp rows load straight into registers: staging them too (launchStaged<..., true>) measured slower
// at hidden 768 (FP32 LayerNorm 89% -> 80% of copy) and for small launches (2.6 -> 3.2 us).
template <class T, int VEC, int NV, Norm NORM> cudaError_t warpRows(const Row<T>& a, cudaStream_t s) {
    warpRowKernel<T, VEC, NV, NORM>
        <<<gridFor((a.rows + kWarpRowsPerBlock - 1) / kWarpRowsPerBlock), 32 * kWarpRowsPerBlock, 0, s>>>(a);
    return launchStatus();
}

template <class T, int VEC, int NV, Norm NORM> cudaError_t blockRows(const Row<T>& a, int64_t packs, cudaStream_t s) {
    const int threads = int((packs + NV - 1) / NV + 31) / 32 * 32;
    if constexpr (VEC > 1) {
        cudaError_t e;
        if (launchStaged<T, VEC, NV, false, NORM>(a, threads, s, e)) return e;
    }
    blockRowKernel<T, VEC, NV, NORM><<<gridFor(a.rows), threads, 0, s>>>(a);
    return launchStatus();
}

// Choose the path by packs per row: at most kMaxElems elements per thread in registers (NV packs),
// one warp per row while that fits, else one block per row of <= kMaxBlock threads.
template <class T, int VEC, Norm NORM> cudaError_t dispatch(const Row<T>& a, cudaStream_t s) {
    constexpr int kMaxElems = VEC == 1 ? 16 : 32;
    const int64_t packs = a.hidden / VEC;
    if (packs <= 32) return warpRows<T, VEC, 1, NORM>(a, s);
    if (packs <= 64) return warpRows<T, VEC, 2, NORM>(a, s);
    if constexpr (4 * VEC <= kMaxElems)
        if (packs <= 128) return warpRows<T, VEC, 4, NORM>(a, s);
    if constexpr (8 * VEC <= kMaxElems)
        if (packs <= 256) return warpRows<T, VEC, 8, NORM>(a, s);
    if (packs <= 2 * kMaxBlock) return blockRows<T, VEC, 2, NORM>(a, packs, s);
    if constexpr (4 * VEC <= kMaxElems)
        if (packs <= 4 * kMaxBlock) return blockRows<T, VEC, 4, NORM>(a, packs, s);
    if constexpr (8 * VEC <= kMaxElems)
        if (packs <= 8 * kMaxBlock) return blockRows<T, VEC, 8, NORM>(a, packs, s);
    if constexpr (16 * VEC <= kMaxElems)
        if (packs <= 16 * kMaxBlock) return blockRows<T, VEC, 16, NORM>(a, packs, s);
    fallbackKernel<T, VEC, NORM><<<gridFor(a.rows), kFallbackThreads, 0, s>>>(a);
    return launchStatus();
}

} // namespace

int32_t skipNormVariant(DType, int64_t) { return -1; }

cudaError_t launchSkipNorm(DType dt, const SkipNormArgs& args, cudaStream_t stream) {
    if (args.rows < 0 || args.hidden < 1 || !(args.epsilon >= 0.f)) return cudaErrorInvalidValue;
    if (args.norm != Norm::kLayer && args.norm != Norm::kRms) return cudaErrorInvalidValue;
    if (args.rows == 0) return cudaSuccess;
    if (!args.x || !args.y || !args.gamma) return cudaErrorInvalidValue;
    if (args.rows > INT64_MAX / args.hidden) return cudaErrorInvalidValue;
    return dispatchDType(dt, [&](auto tag) -> cudaError_t {
        using T = decltype(tag);
        constexpr int kVec = IoSize<T>::kVec;
        const Row<T> a{static_cast<const T*>(args.x), static_cast<const T*>(args.skip), args.bias, args.gamma,
                       args.beta, static_cast<T*>(args.y), static_cast<T*>(args.sum), args.rows, args.hidden,
                       args.epsilon};
        const bool vec = args.hidden % kVec == 0 && aligned16(args.x) && aligned16(args.y) &&
                         aligned16(args.gamma) && (!args.skip || aligned16(args.skip)) &&
                         (!args.sum || aligned16(args.sum)) && (!args.bias || aligned16(args.bias)) &&
                         (!args.beta || aligned16(args.beta));
        const bool layer = args.norm == Norm::kLayer;
        if (vec) return layer ? dispatch<T, kVec, Norm::kLayer>(a, stream) : dispatch<T, kVec, Norm::kRms>(a, stream);
        return layer ? dispatch<T, 1, Norm::kLayer>(a, stream) : dispatch<T, 1, Norm::kRms>(a, stream);
    });
}

} // namespace trtp
