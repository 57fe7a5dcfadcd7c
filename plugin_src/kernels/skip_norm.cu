// s = x (+ skip) (+ bias); y = norm(s) * gamma (+ beta). FP32 statistics, two-pass over registers
// (mean, then centred variance), so each element is read once and written once.
//   small rows: one warp per row;  rows up to 16384+: one block per row, row held in registers;
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

// One row held in registers: NV packs of VEC elements per thread, `tpr` threads per row.
// WARP: the row group is one warp; else the whole block. Columns fit in int (hidden <= 2^31 / 32).
template <class T, int VEC, int NV, bool WARP, Norm NORM>
__device__ __forceinline__ void normRow(const Row<T>& a, int64_t row, int t, int tpr, float* red0, float* red1) {
    const int64_t base = row * a.hidden;
    const int hidden = int(a.hidden);
    const T* x = a.x + base;
    const T* skip = a.skip ? a.skip + base : nullptr;
    Pack<T, VEC> xp[NV], sp[NV];
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        const int c = (j * tpr + t) * VEC;
        if (c < hidden) {
            xp[j] = load<T, VEC>(x + c);
            if (skip) sp[j] = load<T, VEC>(skip + c);
        }
    }
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
            if (a.bias) {
                float b[VEC];
                loadWeights<VEC>(a.bias + c, b);
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
    const float invH = 1.f / float(hidden);
    float mean = 0.f;
    if constexpr (NORM == Norm::kLayer) {
        mean = (WARP ? warpSum(acc) : blockSum(acc, red0)) * invH;
        acc = 0.f;
#pragma unroll
        for (int j = 0; j < NV; ++j) {
            if ((j * tpr + t) * VEC < hidden) {
#pragma unroll
                for (int i = 0; i < VEC; ++i) {
                    const float d = s[j][i] - mean;
                    acc = fmaf(d, d, acc);
                }
            }
        }
    }
    const float rstd = rsqrtf((WARP ? warpSum(acc) : blockSum(acc, red1)) * invH + a.eps);
    T* y = a.y + base;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        const int c = (j * tpr + t) * VEC;
        if (c < hidden) {
            float g[VEC], o[VEC];
            loadWeights<VEC>(a.gamma + c, g);
#pragma unroll
            for (int i = 0; i < VEC; ++i) o[i] = (s[j][i] - mean) * rstd * g[i];
            if (a.beta) {
                float b[VEC];
                loadWeights<VEC>(a.beta + c, b);
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
         row += int64_t(gridDim.x) * kWarpRowsPerBlock)
        normRow<T, VEC, NV, true, NORM>(a, row, lane, 32, nullptr, nullptr);
}

template <class T, int VEC, int NV, Norm NORM> __global__ void __launch_bounds__(kMaxBlock) blockRowKernel(Row<T> a) {
    __shared__ float red0[32], red1[32];
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        normRow<T, VEC, NV, false, NORM>(a, row, threadIdx.x, blockDim.x, red0, red1);
        __syncthreads(); // red0/red1 are rewritten by the next row
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

template <class T, int VEC, int NV, Norm NORM> cudaError_t warpRows(const Row<T>& a, cudaStream_t s) {
    warpRowKernel<T, VEC, NV, NORM>
        <<<gridFor((a.rows + kWarpRowsPerBlock - 1) / kWarpRowsPerBlock), 32 * kWarpRowsPerBlock, 0, s>>>(a);
    return launchStatus();
}

template <class T, int VEC, int NV, Norm NORM> cudaError_t blockRows(const Row<T>& a, int64_t packs, cudaStream_t s) {
    const int threads = int((packs + NV - 1) / NV + 31) / 32 * 32;
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
