// SkipNorm's kernels: s = x (+ skip) (+ bias); y = norm(s) * gamma (+ beta), FP32 statistics; every
// element of x, skip and y is read or written once. A row stays in registers as this thread's packs:
//   warp rows:  one warp per row, several rows per block (short rows, no barrier);
//   block rows: one block of up to 512 threads per row, a barrier per reduction;
//   looped rows (16-bit rows from 2048 elements): one block of 128-512 threads per row, a pack per
//   thread at a time, two passes (statistics, then output), the row prefetched into L2 first and
//   kept there between them by an evict-last policy;
//   long rows (past the register budget, or pointers not 16-byte aligned): one block per row, three
//   passes over global memory, the re-reads served by L2.
// Rows of any length take 16-byte packs: the elements before a row's first aligned pack (head) and
// after its last (tail) are one element each of the first threads. Prefetching variants run a grid of
// the blocks that fit on the GPU at once, each loading its next row before it reduces the current one.
// LayerNorm takes the mean, then the centred sum of squares from registers (two reductions: exact as
// two passes); RMSNorm one reduction. y and sum may alias x or skip (same shape): each thread loads a
// row before it stores any of it (looped rows: each pack's stores after its last read).
#pragma once
#include "common.cuh"
#include "skip_norm.h"

#include <type_traits>

#include "variants.cuh"

namespace trtp {
namespace {

using namespace detail;

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
    const T* gammaIo; // gamma and beta in T (exact copies) or nullptr
    const T* betaIo;

    __device__ __forceinline__ const T* skipRow(int64_t row) const {
        return skip + (skipRows ? row % skipRows : row) * hidden;
    }
};

// A row in 16-byte packs: `head` elements before the first aligned pack, `tail` after the last.
template <int VEC> struct Span {
    int head, packs, tail;
    __device__ __forceinline__ Span(int64_t start, int hidden) {
        head = min(int((VEC - start % VEC) % VEC), hidden);
        packs = (hidden - head) / VEC;
        tail = hidden - head - packs * VEC;
    }
};

// What one thread holds of a row: packs of x and skip, its head and tail elements.
template <class T, int VEC, int NV> struct Slice {
    Pack<T, VEC> x[NV], k[NV];
    T xe[2], ke[2];
};

// N FP32 weights from column c of `len`: float4 loads where c is a multiple of 4 (`vec4`); elsewhere
// float4s shifted into place (SHIFT) or one float per load.
template <bool SHIFT, int N>
__device__ __forceinline__ void weightsAt(const float* w, int c, int len, bool vec4, float (&out)[N]) {
    if (vec4) {
        loadWeights<N>(w + c, out);
    } else if constexpr (SHIFT) {
        loadWeightsAt<N>(w, c, len, out);
    } else {
#pragma unroll
        for (int i = 0; i < N; ++i) out[i] = __ldg(w + c + i);
    }
}

// Sum over the row group (a warp, or the block), in every thread. `red`: 32 floats of this block that
// no thread writes again before every thread has read them (buffers alternate from row to row).
template <bool WARP> __device__ __forceinline__ float groupSum(float v, float* red) {
    v = warpSum(v);
    if constexpr (WARP) return v;
    const int lane = threadIdx.x & 31;
    if (lane == 0) red[threadIdx.x >> 5] = v;
    __syncthreads();
    return warpSum(lane < int(blockDim.x >> 5) ? red[lane] : 0.f);
}

template <bool SKIP, class T, int VEC, int NV>
__device__ __forceinline__ void loadSlice(const Row<T>& a, int64_t row, int tpr, int t, const Span<VEC>& sp,
                                          Slice<T, VEC, NV>& s) {
    const T* x = a.x + row * a.hidden;
    const T* k = SKIP ? a.skipRow(row) : nullptr;
#pragma unroll
    for (int j = 0; j < NV; ++j) {
        const int c = sp.head + (j * tpr + t) * VEC;
        if (j * tpr + t < sp.packs) {
            s.x[j] = load<T, VEC>(x + c);
            if (SKIP) s.k[j] = load<T, VEC>(k + c);
        }
    }
    const int tail = sp.head + sp.packs * VEC + t;
    if (t < sp.head) {
        s.xe[0] = x[t];
        if (SKIP) s.ke[0] = k[t];
    }
    if (t < sp.tail) {
        s.xe[1] = x[tail];
        if (SKIP) s.ke[1] = k[tail];
    }
}

// PREFETCH: a resident grid, each row group loading its next row before it reduces this one.
// SKIP: a.skip is set (the registers for it only when it is).
// IOW: gamma/beta read from a.gammaIo/betaIo (T: half the bytes of FP32); rows are whole aligned packs.
// HOIST: gamma/beta loaded right after the row, so their latency overlaps the reductions'.
// SHIFT: 16-bit rows whose packs can start at a column that is not a multiple of 4 (hidden % 4 != 0):
// their FP32 weights come as float4s shifted into place, 3 loads per pack, not 8; a kernel of its own
// (RESULTS.md, History).
template <class T, int VEC, int NV, bool WARP, Norm NORM, bool PREFETCH, bool SKIP, bool IOW, bool HOIST, bool SHIFT>
__global__ void __launch_bounds__(kMaxThreads) rowKernel(Row<T> a) {
    __shared__ float red[2][2][32];
    const int tpr = WARP ? 32 : blockDim.x, t = WARP ? threadIdx.x & 31 : threadIdx.x;
    const int perBlock = WARP ? blockDim.x >> 5 : 1;
    const int hidden = int(a.hidden);
    const float invH = 1.f / float(hidden);
    const int64_t stride = int64_t(gridDim.x) * perBlock;
    int64_t row = int64_t(blockIdx.x) * perBlock + (WARP ? threadIdx.x >> 5 : 0);

    Slice<T, VEC, NV> next;
    if (PREFETCH && row < a.rows) loadSlice<SKIP>(a, row, tpr, t, Span<VEC>(row * a.hidden, hidden), next);

    for (int parity = 0; row < a.rows; row += stride, parity ^= 1) {
        const int64_t base = row * a.hidden;
        const Span<VEC> sp(base, hidden);
        Slice<T, VEC, NV> cur;
        if constexpr (PREFETCH) {
            cur = next;
            const int64_t after = row + stride;
            if (after < a.rows) loadSlice<SKIP>(a, after, tpr, t, Span<VEC>(after * a.hidden, hidden), next);
        } else {
            loadSlice<SKIP>(a, row, tpr, t, sp, cur);
        }
        const bool vec4 = (sp.head & 3) == 0;
        const int tailCol = sp.head + sp.packs * VEC + t;
        const bool hasHead = t < sp.head, hasTail = t < sp.tail;
        Pack<T, VEC> gp[HOIST && IOW ? NV : 1], bp[HOIST && IOW ? NV : 1];
        float gf[HOIST && !IOW ? NV : 1][VEC], bf[HOIST && !IOW ? NV : 1][VEC];
        if constexpr (HOIST) {
#pragma unroll
            for (int j = 0; j < NV; ++j) {
                const int c = sp.head + (j * tpr + t) * VEC;
                if (j * tpr + t < sp.packs) {
                    if constexpr (IOW) {
                        gp[j] = load<T, VEC>(a.gammaIo + c);
                        if (a.beta) bp[j] = load<T, VEC>(a.betaIo + c);
                    } else {
                        weightsAt<SHIFT, VEC>(a.gamma, c, hidden, vec4, gf[j]);
                        if (a.beta) weightsAt<SHIFT, VEC>(a.beta, c, hidden, vec4, bf[j]);
                    }
                }
            }
        }

        // s = x + skip + bias, in FP32; the sum output; this thread's partial statistics.
        float s[NV][VEC], e[2] = {0.f, 0.f};
        float acc = 0.f;
#pragma unroll
        for (int j = 0; j < NV; ++j) {
            const int c = sp.head + (j * tpr + t) * VEC;
            if (j * tpr + t < sp.packs) {
                unpack(cur.x[j], s[j]);
                if constexpr (SKIP) {
                    float k[VEC];
                    unpack(cur.k[j], k);
#pragma unroll
                    for (int i = 0; i < VEC; ++i) s[j][i] += k[i];
                }
                if (a.bias) {
                    float b[VEC];
                    weightsAt<SHIFT, VEC>(a.bias, c, hidden, vec4, b);
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
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            if (h == 0 ? hasHead : hasTail) {
                const int c = h == 0 ? t : tailCol;
                e[h] = toFloat(cur.xe[h]) + (SKIP ? toFloat(cur.ke[h]) : 0.f) + (a.bias ? __ldg(a.bias + c) : 0.f);
                if (a.sum) a.sum[base + c] = fromFloat<T>(e[h]);
                acc += NORM == Norm::kLayer ? e[h] : e[h] * e[h];
            }
        }
        float mean = 0.f;
        if constexpr (NORM == Norm::kLayer) { // the mean, then the centred sum of squares: exact as two passes
            mean = groupSum<WARP>(acc, red[parity][0]) * invH;
            acc = 0.f;
#pragma unroll
            for (int j = 0; j < NV; ++j) {
                if (j * tpr + t < sp.packs) {
#pragma unroll
                    for (int i = 0; i < VEC; ++i) acc = fmaf(s[j][i] - mean, s[j][i] - mean, acc);
                }
            }
            if (hasHead) acc = fmaf(e[0] - mean, e[0] - mean, acc);
            if (hasTail) acc = fmaf(e[1] - mean, e[1] - mean, acc);
        }
        const float rstd = rsqrtf(groupSum<WARP>(acc, red[parity][1]) * invH + a.eps);

#pragma unroll
        for (int j = 0; j < NV; ++j) {
            const int c = sp.head + (j * tpr + t) * VEC;
            if (j * tpr + t < sp.packs) {
                float g[VEC], b[VEC], o[VEC];
                if constexpr (HOIST && IOW) {
                    unpack(gp[j], g);
                    if (a.beta) unpack(bp[j], b);
                } else if constexpr (HOIST) {
#pragma unroll
                    for (int i = 0; i < VEC; ++i) g[i] = gf[j][i], b[i] = bf[j][i];
                } else if constexpr (IOW) {
                    unpack(load<T, VEC>(a.gammaIo + c), g);
                    if (a.beta) unpack(load<T, VEC>(a.betaIo + c), b);
                } else {
                    weightsAt<SHIFT, VEC>(a.gamma, c, hidden, vec4, g);
                    if (a.beta) weightsAt<SHIFT, VEC>(a.beta, c, hidden, vec4, b);
                }
#pragma unroll
                for (int i = 0; i < VEC; ++i) o[i] = fmaf((s[j][i] - mean) * rstd, g[i], a.beta ? b[i] : 0.f);
                store<T, VEC>(a.y + base + c, o);
            }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            if (h == 0 ? hasHead : hasTail) {
                const int c = h == 0 ? t : tailCol;
                a.y[base + c] = fromFloat<T>(fmaf((e[h] - mean) * rstd, __ldg(a.gamma + c), a.beta ? __ldg(a.beta + c) : 0.f));
            }
        }
    }
}

// The looped path: a row per block (WARP: per warp), each thread one pack at a time; the statistics
// from a first read of the row, which marks it evict-last in L2, the output from a second read
// (Inductor's looped reduction). 32-40 registers (sm_90), so 1536-2048 threads of rows resident per
// SM where the register rows hold 512-1024. LayerNorm's statistics: each thread's sums about its own
// first value (no cancellation from the row's offset), the mean, then the centred sum of squares from
// those sums (two reductions, like the register rows).
// PF & kOwnRow: the row's lines are prefetched into L2 before its first read (the packs a thread reads
// one after another then wait on one DRAM latency, not one each); PF & kNextRow: a resident grid, each
// row group prefetching its next row while it writes this one.
// ODD: rows need not be whole aligned packs (Span: head and tail elements one each of the first
// threads; 16-bit FP32 weights as float4s shifted into place).
constexpr int kOwnRow = 1, kNextRow = 2;
// BIAS: a.bias is set (a template flag: a runtime test became predicated adds on every pack).
// Pointers advance by the step instead of being recomputed from the row and column per pack: fewer
// instructions per element, which (with L2 prefetch) is what limits this path.
template <class T, int VEC, Norm NORM, bool SKIP, bool BIAS, bool IOW, bool WARP, int PF, bool ODD>
__global__ void __launch_bounds__(kMaxThreads) loopRowKernel(Row<T> a) {
    __shared__ float red[2][2][32];
    const int hidden = int(a.hidden), t = WARP ? threadIdx.x & 31 : threadIdx.x, step = WARP ? 32 : blockDim.x;
    const int perBlock = WARP ? blockDim.x >> 5 : 1, jump = step * VEC;
    const int64_t stride = int64_t(gridDim.x) * perBlock;
    const float invH = 1.f / float(hidden);
    auto weights = [&](const float* w, int c, bool vec4, float (&out)[VEC]) {
        if constexpr (ODD) weightsAt<(sizeof(T) == 2), VEC>(w, c, hidden, vec4, out);
        else loadWeights<VEC>(w + c, out);
    };
    // s = x + skip + bias at column c (x at xp, skip at kp), read under eviction policy KEEP
    auto sumAt = [&](auto keep, const T* xp, const T* kp, int c, bool vec4, float (&s)[VEC]) {
        constexpr bool KEEP = decltype(keep)::value;
        const Pack<T, VEC> xv = loadL2<KEEP, T, VEC>(xp);
        [[maybe_unused]] Pack<T, VEC> kv;
        if constexpr (SKIP) kv = loadL2<KEEP, T, VEC>(kp); // both loads before any use
        unpack(xv, s);
        if constexpr (SKIP) {
            float f[VEC];
            unpack(kv, f);
#pragma unroll
            for (int i = 0; i < VEC; ++i) s[i] += f[i];
        }
        if constexpr (BIAS) {
            float b[VEC];
            weights(a.bias, c, vec4, b);
#pragma unroll
            for (int i = 0; i < VEC; ++i) s[i] += b[i];
        }
    };
    // the head or tail element of this thread, at column c
    auto sumOne = [&](const T* x, const T* k, int c) {
        return toFloat(x[c]) + (SKIP ? toFloat(k[c]) : 0.f) + (BIAS ? __ldg(a.bias + c) : 0.f);
    };
    auto prefetchRow = [&](int64_t row) {
        const T* x = a.x + row * a.hidden;
        const T* k = SKIP ? a.skipRow(row) : nullptr;
#pragma unroll 1
        for (int c = t * VEC; c < hidden; c += jump) {
            prefetchL2(x + c);
            if constexpr (SKIP) prefetchL2(k + c);
        }
    };
    int64_t row = int64_t(blockIdx.x) * perBlock + (WARP ? threadIdx.x >> 5 : 0);
    if ((PF & kNextRow) && row < a.rows) prefetchRow(row);
    int parity = 0;
#pragma unroll 1
    for (; row < a.rows; row += stride, parity ^= 1) {
        const int64_t base = row * a.hidden;
        const T* x = a.x + base;
        const T* k = SKIP ? a.skipRow(row) : nullptr;
        const Span<VEC> sp = ODD ? Span<VEC>(base, hidden) : Span<VEC>(0, hidden);
        const bool vec4 = !ODD || (sp.head & 3) == 0;
        const int first = sp.head + t * VEC, end = sp.head + sp.packs * VEC, tailCol = end + t;
        const bool hasHead = ODD && t < sp.head, hasTail = ODD && t < sp.tail;
        if (PF & kOwnRow) prefetchRow(row);
        float shift = 0.f, s1 = 0.f, s2 = 0.f, e[2] = {0.f, 0.f};
        int n = 0;
        auto accumulate = [&](const float* v, int count) {
            if (NORM == Norm::kLayer && n == 0) shift = v[0];
#pragma unroll
            for (int i = 0; i < count; ++i) {
                const float d = v[i] - shift;
                s1 += d;
                s2 = fmaf(d, d, s2);
            }
            n += count;
        };
        if (hasHead) e[0] = sumOne(x, k, t), accumulate(e, 1);
        if (hasTail) e[1] = sumOne(x, k, tailCol), accumulate(e + 1, 1);
        {
            const T *xp = x + first, *kp = SKIP ? k + first : nullptr;
#pragma unroll 1 // one pack in flight per thread: unrolled, the compiler hoists loads and takes registers
            for (int c = first; c < end; c += jump, xp += jump, kp += SKIP ? jump : 0) {
                float s[VEC];
                sumAt(std::true_type{}, xp, kp, c, vec4, s);
                accumulate(s, VEC);
            }
        }
        if ((PF & kNextRow) && row + stride < a.rows) prefetchRow(row + stride);
        float mean = 0.f;
        if constexpr (NORM == Norm::kLayer) {
            mean = groupSum<WARP>(fmaf(float(n), shift, s1), red[parity][0]) * invH;
            const float d = shift - mean; // sum of (v - mean)^2 = sum of ((v - shift) + d)^2
            s2 = fmaf(float(n) * d, d, fmaf(2.f * d, s1, s2));
        }
        const float rstd = rsqrtf(groupSum<WARP>(s2, red[parity][1]) * invH + a.eps);
        {
            const T *xp = x + first, *kp = SKIP ? k + first : nullptr;
            T* yp = a.y + base + first;
#pragma unroll 1
            for (int c = first; c < end; c += jump, xp += jump, kp += SKIP ? jump : 0, yp += jump) {
                float s[VEC], g[VEC], b[VEC], o[VEC];
                sumAt(std::false_type{}, xp, kp, c, vec4, s);
                if constexpr (IOW) {
                    unpack(load<T, VEC>(a.gammaIo + c), g);
                    if (a.beta) unpack(load<T, VEC>(a.betaIo + c), b);
                } else {
                    weights(a.gamma, c, vec4, g);
                    if (a.beta) weights(a.beta, c, vec4, b);
                }
#pragma unroll
                for (int i = 0; i < VEC; ++i) o[i] = fmaf((s[i] - mean) * rstd, g[i], a.beta ? b[i] : 0.f);
                if (a.sum) store<T, VEC>(a.sum + (yp - a.y), s); // after the row's last read: sum may alias x or skip
                store<T, VEC>(yp, o);
            }
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) { // the head and tail elements, from registers (read once)
            if (h == 0 ? hasHead : hasTail) {
                const int c = h == 0 ? t : tailCol;
                if (a.sum) a.sum[base + c] = fromFloat<T>(e[h]);
                a.y[base + c] = fromFloat<T>(fmaf((e[h] - mean) * rstd, __ldg(a.gamma + c), a.beta ? __ldg(a.beta + c) : 0.f));
            }
        }
    }
}

// Any hidden, any alignment: statistics from global memory (the row stays in L1/L2 between passes).
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
            mean = blockSum(acc, red[0]) * invH;
            acc = 0.f;
#pragma unroll 4
            for (int64_t c = int64_t(threadIdx.x) * VEC; c < a.hidden; c += int64_t(blockDim.x) * VEC) {
                float s[VEC];
                sumAt(c, s);
                for (int i = 0; i < VEC; ++i) acc = fmaf(s[i] - mean, s[i] - mean, acc);
            }
        }
        const float rstd = rsqrtf(blockSum(acc, red[1]) * invH + a.eps);
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

} // namespace
} // namespace trtp
