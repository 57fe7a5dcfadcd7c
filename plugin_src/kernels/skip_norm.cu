// s = x (+ skip) (+ bias); y = norm(s) * gamma (+ beta). FP32 statistics; every element of x, skip
// and y is read or written once. The row stays in registers as this thread's 16-byte packs:
//   warp rows:  one warp per row, several rows per block (short rows, no barrier);
//   block rows: one block of packs / NV threads per row;
//   long rows (16-bit rows past 8192, rows without 16-byte packs, or past the register budget): one
//   block per row, three passes over global memory, the re-reads served by L2.
// No shared-memory staging and no persistent grid: the rows in flight per SM are what registers allow
// (LayerNorm FP16 4096: 64 registers, 4 blocks, DRAM 56% under ncu). The staged persistent design this
// replaced was faster for plain 16-bit RMSNorm at hidden >= 5120 and slower elsewhere
// (benchmarks/RESULTS.md, History). LayerNorm takes the mean, then the centred sum of squares from registers
// (two reductions: exact as two passes); RMSNorm one reduction. The variant (warp or block, packs per
// thread) is a pure function of dtype and hidden, chosen once when a plugin is configured.
// y and sum may alias x or skip (same shape): each thread loads its packs before it stores any.
#include "common.cuh"
#include "skip_norm.h"

namespace trtp {
namespace {

using namespace detail;

constexpr int kWarpRows = 4;    // rows per block on the warp path
constexpr int kMaxThreads = 512;   // block-path threads per row
constexpr int kLongThreads = 512;
constexpr int kMaxElems = 32;   // FP32 values per thread held in registers
constexpr int kNvs[] = {1, 2, 3, 4, 6, 8, 12, 16}; // packs per thread, by variant index
constexpr int kNumNv = 8;
constexpr int kLong = 15;       // variant index of the long-row path

// variant = vec * 64 + warp * 16 + index into kNvs (or kLong)
constexpr int32_t encode(bool vec, bool warp, int nv) { return int32_t(vec) * 64 + int32_t(warp) * 16 + nv; }
constexpr bool isVec(int32_t v) { return v & 64; }
constexpr bool isWarp(int32_t v) { return v & 16; }
constexpr int nvIndex(int32_t v) { return v & 15; }

template <class T> struct Row {
    const T* x;
    const T* skip;
    const float* bias;
    const float* gamma;
    const float* beta;
    T* y;
    T* sum;
    int64_t rows, hidden, skipRows;
    float eps;

    __device__ __forceinline__ const T* skipRow(int64_t row) const {
        return skip + (skipRows ? row % skipRows : row) * hidden;
    }
};

// Sum over the row group (a warp, or the block); every thread gets it. `red`: 32 floats that no
// other reduction of this block may use until every thread has returned from this one.
template <bool WARP> __device__ __forceinline__ float groupSum(float v, float* red) {
    v = warpSum(v);
    if constexpr (WARP) return v;
    const int lane = threadIdx.x & 31;
    if (lane == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    return warpSum(lane < int(blockDim.x >> 5) ? red[lane] : 0.f);
}

template <class T, int VEC, int NV, bool WARP, Norm NORM>
__global__ void __launch_bounds__(kMaxThreads) rowKernel(Row<T> a) {
    __shared__ float red[2][32];
    const int tpr = WARP ? 32 : blockDim.x, t = WARP ? threadIdx.x & 31 : threadIdx.x;
    const int perBlock = WARP ? blockDim.x >> 5 : 1;
    const int hidden = int(a.hidden);
    const float invH = 1.f / float(hidden);
    for (int64_t row = int64_t(blockIdx.x) * perBlock + (WARP ? threadIdx.x >> 5 : 0); row < a.rows;
         row += int64_t(gridDim.x) * perBlock) {
        const int64_t base = row * a.hidden;
        const T* skip = a.skip ? a.skipRow(row) : nullptr;
        Pack<T, VEC> px[NV], ps[NV];
#pragma unroll
        for (int j = 0; j < NV; ++j) {
            const int c = (j * tpr + t) * VEC;
            if (c < hidden) {
                px[j] = load<T, VEC>(a.x + base + c);
                if (skip) ps[j] = load<T, VEC>(skip + c);
            }
        }
        float s[NV][VEC];
        float acc = 0.f;
#pragma unroll
        for (int j = 0; j < NV; ++j) {
            const int c = (j * tpr + t) * VEC;
            if (c < hidden) {
                unpack(px[j], s[j]);
                if (skip) {
                    float k[VEC];
                    unpack(ps[j], k);
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
        float mean = 0.f;
        if constexpr (NORM == Norm::kLayer) {
            mean = groupSum<WARP>(acc, red[0]) * invH;
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
        const float rstd = rsqrtf(groupSum<WARP>(acc, red[1]) * invH + a.eps);
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
                store<T, VEC>(a.y + base + c, o);
            }
        }
        if constexpr (!WARP) __syncthreads(); // red is rewritten by the next row (only when rows > grid)
    }
}

// Any hidden: statistics from global memory (the row stays in L1/L2 between passes).
template <class T, int VEC, Norm NORM> __global__ void __launch_bounds__(kLongThreads) longRowKernel(Row<T> a) {
    __shared__ float red[2][32];
    const float invH = 1.f / float(a.hidden);
    for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
        const int64_t base = row * a.hidden;
        const T* skip = a.skip ? a.skipRow(row) : nullptr;
        auto sumAt = [&](int64_t c, float (&s)[VEC]) {
            unpack(load<T, VEC>(a.x + base + c), s);
            if (skip) {
                float k[VEC];
                unpack(load<T, VEC>(skip + c), k);
                for (int i = 0; i < VEC; ++i) s[i] += k[i];
            }
            if (a.bias) {
                float b[VEC];
                loadWeights<VEC>(a.bias + c, b);
                for (int i = 0; i < VEC; ++i) s[i] += b[i];
            }
        };
        float acc = 0.f, mean = 0.f;
#pragma unroll 4
        for (int64_t c = int64_t(threadIdx.x) * VEC; c < a.hidden; c += int64_t(blockDim.x) * VEC) {
            float s[VEC];
            sumAt(c, s);
            for (int i = 0; i < VEC; ++i) acc += NORM == Norm::kLayer ? s[i] : s[i] * s[i];
        }
        if constexpr (NORM == Norm::kLayer) {
            mean = groupSum<false>(acc, red[0]) * invH;
            acc = 0.f;
#pragma unroll 4
            for (int64_t c = int64_t(threadIdx.x) * VEC; c < a.hidden; c += int64_t(blockDim.x) * VEC) {
                float s[VEC];
                sumAt(c, s);
                for (int i = 0; i < VEC; ++i) acc = fmaf(s[i] - mean, s[i] - mean, acc);
            }
        }
        const float rstd = rsqrtf(groupSum<false>(acc, red[1]) * invH + a.eps);
#pragma unroll 2
        for (int64_t c = int64_t(threadIdx.x) * VEC; c < a.hidden; c += int64_t(blockDim.x) * VEC) {
            float s[VEC], g[VEC], o[VEC];
            sumAt(c, s);
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

constexpr int vecOf(int es) { return 16 / es; }

// Threads per row of a block-path variant (a multiple of 32).
inline int64_t blockThreads(int64_t packs, int nv) { return ceilDiv(ceilDiv(packs, nv), 32) * 32; }

// Whether variant v can run rows of `hidden` elements of es bytes.
bool feasible(int32_t v, int es, int64_t hidden) {
    if (v < 0 || v >= 128 || (v & 32)) return false;
    const int idx = nvIndex(v), vw = isVec(v) ? vecOf(es) : 1;
    if (isVec(v) && hidden % vw) return false;
    if (idx == kLong) return !isWarp(v);
    if (idx >= kNumNv || kNvs[idx] * vw > kMaxElems) return false;
    const int64_t packs = hidden / vw;
    return isWarp(v) ? packs <= 32 * kNvs[idx] : blockThreads(packs, kNvs[idx]) <= kMaxThreads;
}

// The variant for (element size, hidden, 16-byte packs fit), from the H200 sweep of every variant
// (bench_kernels.py --sweep; RESULTS.md, History): a warp per row up to 3 packs per lane (1 for BF16,
// whose conversions cost registers: a 32-thread block of 3 packs measured faster at 768); then a block
// with 2 (FP16), 4 (BF16: its conversions cost more registers) or 3-8 (FP32) packs per thread; past
// 8192 16-bit elements, and for rows that take no 16-byte packs, the long-row path (re-reads from L2)
// beat every register path. A variant the rule lands on that cannot run gives way to the long-row path.
int32_t choose(int es, int64_t hidden, bool vec, bool bf16) {
    const int vw = vec ? vecOf(es) : 1;
    const int64_t packs = hidden / vw;
    auto idx = [](int nv) {
        int i = 0;
        while (i + 1 < kNumNv && kNvs[i] < nv) ++i;
        return i;
    };
    int32_t v = encode(vec, false, kLong);
    if (packs <= 32 * (bf16 && vec ? 1 : 3)) v = encode(vec, true, idx(int(ceilDiv(packs, 32))));
    else if (!vec || (es == 2 && hidden > 8192)) return v;
    else if (es == 2) v = encode(true, false, idx(bf16 ? 4 : 2));
    else v = encode(true, false, idx(hidden <= 3072 ? 3 : 8));
    return feasible(v, es, hidden) ? v : encode(vec, false, kLong);
}

template <class T, int VEC, Norm NORM, bool WARP, int I>
cudaError_t launchRows(const Row<T>& a, int64_t packs, cudaStream_t s) {
    constexpr int NV = kNvs[I];
    if constexpr (NV * VEC > kMaxElems) {
        return cudaErrorInvalidValue;
    } else if constexpr (WARP) {
        return launchKernel(rowKernel<T, VEC, NV, true, NORM>, gridFor(ceilDiv(a.rows, kWarpRows)), 32 * kWarpRows,
                            s, a);
    } else {
        return launchKernel(rowKernel<T, VEC, NV, false, NORM>, gridFor(a.rows), unsigned(blockThreads(packs, NV)),
                            s, a);
    }
}

template <class T, int VEC, Norm NORM, bool WARP, int... I>
cudaError_t byIndex(int idx, const Row<T>& a, int64_t packs, cudaStream_t s, std::integer_sequence<int, I...>) {
    cudaError_t e = cudaErrorInvalidValue;
    ((idx == I ? (e = launchRows<T, VEC, NORM, WARP, I>(a, packs, s), true) : false) || ...);
    return e;
}

template <class T, int VEC, Norm NORM> cudaError_t launchVariant(int32_t v, const Row<T>& a, cudaStream_t s) {
    const int64_t packs = a.hidden / VEC;
    if (nvIndex(v) == kLong) return launchKernel(longRowKernel<T, VEC, NORM>, gridFor(a.rows), kLongThreads, s, a);
    const auto seq = std::make_integer_sequence<int, kNumNv>{};
    return isWarp(v) ? byIndex<T, VEC, NORM, true>(nvIndex(v), a, packs, s, seq)
                     : byIndex<T, VEC, NORM, false>(nvIndex(v), a, packs, s, seq);
}

template <class T, Norm NORM> cudaError_t launchNorm(int32_t v, const Row<T>& a, cudaStream_t s) {
    return isVec(v) ? launchVariant<T, IoSize<T>::kVec, NORM>(v, a, s) : launchVariant<T, 1, NORM>(v, a, s);
}

int elemSize(DType dt) { return dt == DType::kFloat32 ? 4 : 2; }

} // namespace

int32_t skipNormVariant(DType dt, int64_t hidden) {
    if (hidden < 1) return -1;
    const int es = elemSize(dt);
    return choose(es, hidden, hidden % vecOf(es) == 0, dt == DType::kBFloat16);
}

int skipNormCandidates(DType dt, int64_t hidden, int32_t* out, int cap) {
    int n = 0;
    for (int32_t v = 0; v < 128; ++v)
        if (feasible(v, elemSize(dt), hidden) && n++ < cap && out) out[n - 1] = v;
    return n;
}

cudaError_t launchSkipNorm(DType dt, const SkipNormArgs& args, cudaStream_t stream) {
    if (args.rows < 0 || args.hidden < 1 || !(args.epsilon >= 0.f) || args.skipRows < 0) return cudaErrorInvalidValue;
    if (args.norm != Norm::kLayer && args.norm != Norm::kRms) return cudaErrorInvalidValue;
    if (args.rows == 0) return cudaSuccess;
    if (!args.x || !args.y || !args.gamma) return cudaErrorInvalidValue;
    if (args.rows > INT64_MAX / args.hidden) return cudaErrorInvalidValue;
    const int es = elemSize(dt);
    const bool aligned = aligned16(args.x) && aligned16(args.y) && aligned16(args.gamma) &&
                         (!args.skip || aligned16(args.skip)) && (!args.sum || aligned16(args.sum)) &&
                         (!args.bias || aligned16(args.bias)) && (!args.beta || aligned16(args.beta));
    int32_t v = args.variant;
    if (!feasible(v, es, args.hidden) || (isVec(v) && !aligned))
        v = choose(es, args.hidden, aligned && args.hidden % vecOf(es) == 0, dt == DType::kBFloat16);
    return dispatchDType(dt, [&](auto tag) -> cudaError_t {
        using T = decltype(tag);
        const Row<T> a{static_cast<const T*>(args.x), static_cast<const T*>(args.skip), args.bias, args.gamma,
                       args.beta, static_cast<T*>(args.y), static_cast<T*>(args.sum), args.rows, args.hidden,
                       args.skipRows, args.epsilon};
        return args.norm == Norm::kLayer ? launchNorm<T, Norm::kLayer>(v, a, stream)
                                         : launchNorm<T, Norm::kRms>(v, a, stream);
    });
}

} // namespace trtp
