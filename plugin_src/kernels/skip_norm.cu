// s = x (+ skip) (+ bias); y = norm(s) * gamma (+ beta). FP32 statistics; every element of x, skip
// and y is read or written once. A row stays in registers as this thread's 16-byte packs:
//   warp rows:  one warp per row, several rows per block (short rows, no barrier);
//   block rows: one block of up to 512 threads per row, a barrier per reduction;
//   long rows (past the register budget, or pointers not 16-byte aligned): one block per row, three
//   passes over global memory, the re-reads served by L2;
//   looped rows (16-bit rows from 2048 elements): not in registers either: one block of 128-512 threads
//   per row, a pack per thread at a time, two passes (statistics, then output), the row prefetched into
//   L2 first and kept there between them by an evict-last policy; 32-40 registers.
// Rows of any length take 16-byte packs: the elements before a row's first aligned pack (head) and
// after its last (tail) are one element each of the first threads.
// Prefetching variants run a grid of the blocks that fit on the GPU at once; each loads its next row
// into registers before reducing the current one, so the loads of one row hide the reductions and
// stores of the last.
// LayerNorm takes the mean, then the centred sum of squares from registers (two reductions: exact as
// two passes); RMSNorm one reduction. (One reduction merging per-thread (count, mean, M2), Chan et
// al., cost more instructions than the rows have per element: 16-bit rows ran at half the speed; per-warp
// statistics merged after one barrier lost up to 38 points of copy to the two barriers.)
// gamma/beta are FP32, or (16-bit I/O, rows of whole aligned packs) exact 16-bit copies the plugin
// keeps when its weights are exact there: half the weight bytes per row.
// The variant is a pure function of (dtype, norm, skip input, hidden, weight kind, small launch or not),
// both chosen once when a plugin is configured; a prefetching variant's resident grid is measured then
// too (skipNormMaxBlocks). Small launches (skipNormSmall) run a block per row, a pack per thread,
// gamma/beta loaded with the row: their time is one row's chain of latencies.
// y and sum may alias x or skip (same shape): each thread loads a row before it stores any of it
// (looped rows: each pack is read and written by one thread, its stores after its last read).
#include "common.cuh"
#include "skip_norm.h"

#include <algorithm>
#include <type_traits>

namespace trtp {
namespace {

using namespace detail;

constexpr int kWarpRows = 4;      // rows per block on the warp path
constexpr int kMaxThreads = 512;  // block-path threads per row
constexpr int kLongThreads = 512;
constexpr int kMaxElems = 32;     // FP32 values per thread held in registers
constexpr int kNvs[] = {1, 2, 3, 4, 6, 8}; // packs per thread, by variant index
constexpr int kNumNv = 6;
constexpr int kLong = 15;         // variant index of the long-row path
constexpr int kLoop = 6;          // variant indices kLoop + i (i < 3): the looped path, 128 << i threads

// variant = index into kNvs (or kLoop + i, kLong) | flags
// (kHoistBit: gamma/beta loaded with the row, before its reductions: a shorter chain per row, more registers)
enum : int32_t { kWarpBit = 16, kHoistBit = 32, kVecBit = 64, kPrefetchBit = 128, kAllBits = 255 };
constexpr int32_t encode(bool vec, bool warp, int nv, bool prefetch = false, bool hoist = false) {
    return nv | (warp ? kWarpBit : 0) | (vec ? kVecBit : 0) | (prefetch ? kPrefetchBit : 0) | (hoist ? kHoistBit : 0);
}
constexpr bool isHoist(int32_t v) { return v & kHoistBit; }
constexpr bool isVec(int32_t v) { return v & kVecBit; }
constexpr bool isWarp(int32_t v) { return v & kWarpBit; }
constexpr bool isPrefetch(int32_t v) { return v & kPrefetchBit; }
constexpr int nvIndex(int32_t v) { return v & 15; }
constexpr bool isLoop(int32_t v) { return nvIndex(v) >= kLoop && nvIndex(v) < kLoop + 3; }
// Looped variants: kHoistBit prefetches each row into L2 before its first read (kOwnRow), kPrefetchBit
// runs a resident grid that prefetches its next rows (kNextRow), kWarpBit a row per warp (128 threads).

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
// (Loading them once per thread and keeping them in registers took 16-32 more registers.)
// HOIST: gamma/beta loaded right after the row, so their latency overlaps the reductions'.
// SHIFT: 16-bit rows whose packs can start at a column that is not a multiple of 4 (hidden % 4 != 0):
// their FP32 weights come as float4s shifted into place, 3 loads per pack, not 8 (L1 then limited these
// rows to 40-60% of copy). A kernel of its own: the code beside the others' cost them registers (FP32
// LayerNorm at 8192 lost a resident block, 0.69x).
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

constexpr int vecOf(int es) { return 16 / es; }
constexpr int elemSize(DType dt) { return dt == DType::kFloat32 ? 4 : 2; }

// Threads per row of a block-path variant (a multiple of 32).
constexpr int64_t blockThreads(int64_t packs, int nv) { return ceilDiv(ceilDiv(packs > 0 ? packs : 1, nv), 32) * 32; }

// The first variant index whose packs per thread are >= nv.
constexpr int nvAtLeast(int64_t nv) {
    int i = 0;
    while (i + 1 < kNumNv && kNvs[i] < nv) ++i;
    return i;
}

// Whether variant v's shape (not whether it is built) can run rows of `hidden` elements of es bytes.
constexpr bool fits(int32_t v, int es, int64_t hidden) {
    if (v < 0 || (v & ~kAllBits)) return false;
    const int idx = nvIndex(v), vw = isVec(v) ? vecOf(es) : 1;
    if (isLoop(v)) return isVec(v) && (!isWarp(v) || idx == kLoop);
    if (idx == kLong) return !isWarp(v) && !isPrefetch(v) && !isHoist(v) && hidden % vw == 0;
    if (!isVec(v) || idx >= kNumNv || kNvs[idx] * vw > kMaxElems) return false;
    const int64_t packs = hidden / vw; // whole packs in any row, whatever its alignment
    return isWarp(v) ? packs <= 32 * kNvs[idx] : blockThreads(packs, kNvs[idx]) <= kMaxThreads;
}

// The looped path for rows of `packs` 16-byte packs: about 4 packs per thread (128 threads up to
// `to128` packs, 256 up to `to256`, then 512); each row prefetched into L2 before its first read
// (kOwnRow: 1-8 points of copy over the loop without it; the next-row prefetch and a warp per row lost:
// experiments/loop_prefetch_sweep.json).
constexpr int32_t loopVariant(int64_t packs, int64_t to128 = 640, int64_t to256 = 1024) {
    return encode(true, false, kLoop + (packs <= to128 ? 0 : packs <= to256 ? 1 : 2), false, true);
}

// The variant for rows of `hidden` elements of es bytes (vec: 16-byte packs possible; io: gamma/beta
// in the 16-bit I/O dtype, rows whole packs), from the H200 sweeps of every variant (bench_kernels.py
// --sweep; RESULTS.md, History): short rows a warp each; then a block with 2-4 packs per thread
// (16-bit; fewer threads per row, more work each, amortize the reductions), 3-8 (FP32). 16-bit rows
// take the looped path from 2048 elements (LayerNorm, RMSNorm; RMSNorm with FP32 weights from 3072),
// with a skip: LayerNorm from 2048 (BF16 or FP32 weights; FP16 rows of whole packs past 8192) or 4096
// (rows not whole packs), RMSNorm past 8192 up to 12288 (16-bit weights) or rows not whole packs past
// 8192 (4-27 points of copy over the register rows at 4096-16384; 7-27 on rows not whole packs);
// FP32 rows keep the register rows, which it did not beat. Prefetching won for RMSNorm (16-bit) and
// FP32 rows past 8192 without a skip. A variant that cannot run gives way to the long path.
// 16-bit rows of whole packs with 16-bit weights (the sweep in benchmarks/sweep_norms.json).
constexpr int32_t pickIo(bool bf16, bool layer, bool skip, int64_t hidden) {
    const int64_t packs = hidden / 8;
    if (packs <= 96) {
        const int nv = nvAtLeast(ceilDiv(packs, 32));
        return packs > 64 && !layer && !skip ? encode(true, false, nvAtLeast(3)) : encode(true, true, nv, packs <= 64 && !skip);
    }
    if (skip ? (hidden > 8192 || (layer && bf16 && hidden >= 2048)) && (layer || hidden <= 12288) : hidden >= 2048)
        return loopVariant(packs, skip ? 384 : 640);
    return encode(true, false, nvAtLeast(skip && (hidden > 12288 || bf16) ? 4 : 2));
}

// small: launches of <= kSkipNormSmallElems elements, where a row's chain of latencies is the time: a block
// per row, the fewest packs per thread (one up to 512 packs), gamma/beta loaded with the row.
constexpr int32_t pick(int es, bool bf16, Norm norm, bool skip, int64_t hidden, bool vec, bool io = false,
                       bool small = false) {
    const bool layer = norm == Norm::kLayer;
    const int32_t fallback = encode(vec && hidden % vecOf(es) == 0, false, kLong);
    if (!vec) return fallback;
    const int64_t packs = hidden / vecOf(es);
    int32_t v = fallback;
    if (small) {
        v = encode(true, false, nvAtLeast(ceilDiv(packs, kMaxThreads)), false, true);
    } else if (io && es == 2 && hidden % 8 == 0) {
        v = pickIo(bf16, layer, skip, hidden);
    } else if (packs <= 96 && (es == 2 || packs <= 128)) {
        v = encode(true, true, nvAtLeast(ceilDiv(packs, 32)), es == 2 && !skip);
    } else if (es == 2) {
        const bool odd = hidden % 8 != 0;
        if (skip ? (layer ? hidden >= (odd ? 4096 : 2048) : odd && hidden > 8192) : hidden >= (layer ? 2048 : 3072))
            v = odd ? (skip && !layer ? loopVariant(packs, 384) : loopVariant(packs, 640, 1536))
                    : loopVariant(packs, skip ? 384 : 640);
        else if (hidden > 8192) v = odd ? encode(true, false, nvAtLeast(4)) : fallback;
        else if (skip) v = encode(true, false, nvAtLeast(4));
        else if (layer) v = encode(true, false, nvAtLeast(hidden >= 3072 && !bf16 ? 3 : 2));
        else v = encode(true, false, nvAtLeast(hidden > 3072 && hidden <= 6144 ? 4 : 2), true);
    } else {
        const int nv = hidden <= 768 ? 3 : hidden <= 8192 ? 4 : hidden <= 12288 ? 6 : 8;
        v = encode(true, false, nvAtLeast(nv), (skip ? layer && hidden > 3072 && hidden <= 8192 : hidden > 8192));
    }
    return fits(v, es, hidden) ? v : fallback;
}

#ifndef TRTPLUGINS_SWEEP
#define TRTPLUGINS_SWEEP 0
#endif
// Row lengths at which pick() changes its answer (either side of each boundary; test_skip_norm_variant.py
// checks that every row length's pick is built).
constexpr int64_t kEdges[] = {1,    128,  129,   256,   257,   384,   384 + 8, 512,   512 + 8, 768,   768 + 8, 2048,
                              2056, 3071, 3072,  3073,  3080,  4096,    4104,  5120,  5128,  6144,    6145,  6152,  8192,    8193,
                              8200, 12288, 12289, 12296, 16384, 16385, 16392, 1 << 20};

// Whether rows of `hidden` elements of es bytes take the SHIFT kernels.
constexpr bool shifted(int es, int64_t hidden) { return es == 2 && hidden % 4 != 0; }

// Rows of whole packs (0), of 16-bit rows starting 8 bytes apart (1), SHIFT rows (2); kernels serve a
// mask of these classes.
constexpr int rowClass(int es, int64_t hidden) { return hidden % vecOf(es) == 0 ? 0 : shifted(es, hidden) ? 2 : 1; }
constexpr unsigned kWhole = 1, kAnyRow = 7;

// Whether this build has the kernel of variant v for (es, bf16, norm, skip) and rows of the classes in
// `rows`: one pick() can return (beside each edge, rows of every class occur), or with TRTPLUGINS_SWEEP
// every one (for bench_kernels.py --sweep). Long-row kernels always.
constexpr bool built(int32_t v, int es, bool bf16, Norm norm, bool skip, unsigned rows) {
    if (TRTPLUGINS_SWEEP || nvIndex(v) == kLong) return true;
    for (int64_t edge : kEdges)
        for (int64_t h : {edge - 1, edge, edge + 1, edge + 4}) // edge + 4: rows of half packs (16-bit)
            for (int k = 0; k < 4 && h > 0 && (rows >> rowClass(es, h) & 1); ++k)
                if (pick(es, bf16, norm, skip, h, true, k & 1, k & 2) == v) return true;
    return false;
}

template <class T> constexpr bool kBf16 = sizeof(T) == 2 && !std::is_same_v<T, __half>;

bool feasible(int32_t v, DType dt, Norm norm, bool skip, int64_t hidden) {
    const int es = elemSize(dt);
    return fits(v, es, hidden) && built(v, es, dt == DType::kBFloat16, norm, skip, 1u << rowClass(es, hidden));
}

// Calls f(kernel, threads per block, rows per block) for variant v's kernel.
template <class T, int VEC, Norm NORM, int I, int C, class F>
cudaError_t atCombo(int64_t hidden, F& f) {
    constexpr bool W = C & 2, P = C & 1, S = C & 4, IOW = C & 8, H = C & 16, SH = C & 32;
    constexpr int NV = kNvs[I];
    if constexpr (NV * VEC > kMaxElems || ((IOW || SH) && sizeof(T) != 2) || (IOW && SH) ||
                  !built(encode(true, W, I, P, H), sizeof(T), kBf16<T>, NORM, S, SH ? 4 : kAnyRow & ~4)) {
        return cudaErrorInvalidValue;
    } else {
        const unsigned threads = W ? 32 * kWarpRows : unsigned(blockThreads(hidden / VEC, NV));
        return f(rowKernel<T, VEC, NV, W, NORM, P, S, IOW, H, SH>, threads, W ? kWarpRows : 1);
    }
}

template <class T, int VEC, Norm NORM, int I, class F, int... C>
cudaError_t atNv(int combo, int64_t hidden, F& f, std::integer_sequence<int, C...>) {
    cudaError_t e = cudaErrorInvalidValue;
    ((combo == C ? (e = atCombo<T, VEC, NORM, I, C>(hidden, f), true) : false) || ...);
    return e;
}

template <class T, int VEC, Norm NORM, class F, int... I>
cudaError_t atIndex(int32_t v, bool skip, bool iow, int64_t hidden, F& f, std::integer_sequence<int, I...>) {
    const int combo = (shifted(sizeof(T), hidden) ? 32 : 0) | (isHoist(v) ? 16 : 0) | (iow ? 8 : 0) | (skip ? 4 : 0) |
                      (isWarp(v) ? 2 : 0) | (isPrefetch(v) ? 1 : 0);
    cudaError_t e = cudaErrorInvalidValue;
    ((nvIndex(v) == I ? (e = atNv<T, VEC, NORM, I>(combo, hidden, f, std::make_integer_sequence<int, 64>{}), true)
                      : false) ||
     ...);
    return e;
}

// Calls f(kernel, threads, rows per block) for looped variant v's kernel (combo: its template flags).
template <class T, int VEC, Norm NORM, int C, class F> cudaError_t atLoopCombo(int32_t v, F& f) {
    constexpr bool S = C & 1, IOW = C & 2, W = C & 4, ODD = C & 32, B = C & 64;
    constexpr int PF = (C >> 3) & 3;
    constexpr int32_t flags = encode(true, W, 0, PF & kNextRow, PF & kOwnRow);
    constexpr bool any = [] { // the build has this kernel for some variant of these flags
        for (int i = 0; i < 3; ++i)
            if (built(flags | (kLoop + i), sizeof(T), kBf16<T>, NORM, S, ODD ? kAnyRow & ~kWhole : kWhole)) return true;
        return false;
    }();
    if constexpr (!any || (IOW && (sizeof(T) != 2 || ODD))) {
        return cudaErrorInvalidValue;
    } else {
        const unsigned threads = 128u << (nvIndex(v) - kLoop);
        return f(loopRowKernel<T, VEC, NORM, S, B, IOW, W, PF, ODD>, threads, W ? int(threads / 32) : 1);
    }
}

template <class T, int VEC, Norm NORM, class F, int... C>
cudaError_t withLoopKernel(int32_t v, bool skip, bool bias, bool iow, int64_t hidden, F& f, std::integer_sequence<int, C...>) {
    const int combo = (bias ? 64 : 0) | (hidden % VEC ? 32 : 0) | (isPrefetch(v) ? kNextRow << 3 : 0) | (isHoist(v) ? kOwnRow << 3 : 0) |
                      (isWarp(v) ? 4 : 0) | (iow ? 2 : 0) | (skip ? 1 : 0);
    cudaError_t e = cudaErrorInvalidValue;
    ((combo == C ? (e = atLoopCombo<T, VEC, NORM, C>(v, f), true) : false) || ...);
    return e;
}

// Calls f(kernel, threads, rows per block) for the kernel of a feasible variant v (with a skip input or
// not; iow: weights in T, rows whole aligned packs).
template <class T, Norm NORM, class F>
cudaError_t withKernel(int32_t v, bool skip, bool bias, bool iow, int64_t hidden, F&& f) {
    constexpr int VEC = IoSize<T>::kVec;
    if (isLoop(v)) return withLoopKernel<T, VEC, NORM>(v, skip, bias, iow, hidden, f, std::make_integer_sequence<int, 128>{});
    if (nvIndex(v) == kLong) {
        return isVec(v) ? f(longRowKernel<T, VEC, NORM>, unsigned(kLongThreads), 1)
                        : f(longRowKernel<T, 1, NORM>, unsigned(kLongThreads), 1);
    }
    return atIndex<T, VEC, NORM>(v, skip, iow, hidden, f, std::make_integer_sequence<int, kNumNv>{});
}

template <class F>
cudaError_t withKernel(DType dt, Norm norm, int32_t v, bool skip, bool bias, bool iow, int64_t hidden, F&& f) {
    return dispatchDType(dt, [&](auto tag) -> cudaError_t {
        using T = decltype(tag);
        return norm == Norm::kLayer ? withKernel<T, Norm::kLayer>(v, skip, bias, iow, hidden, f)
                                    : withKernel<T, Norm::kRms>(v, skip, bias, iow, hidden, f);
    });
}

// Blocks of `kernel` resident on the current GPU at once (0 if the query fails).
template <class K> int32_t residentBlocks(K kernel, unsigned threads) {
    int dev = 0, sms = 0, perSm = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, int(threads), 0) != cudaSuccess)
        return 0;
    return sms * perSm;
}

} // namespace

int32_t skipNormVariant(DType dt, Norm norm, bool skip, int64_t hidden, bool ioWeights, bool small) {
    if (hidden < 1) return -1;
    return pick(elemSize(dt), dt == DType::kBFloat16, norm, skip, hidden, true, ioWeights, small);
}

int32_t skipNormMaxBlocks(DType dt, Norm norm, bool skip, int32_t variant, int64_t hidden) {
    if (!feasible(variant, dt, norm, skip, hidden) || !isPrefetch(variant)) return 0;
    int32_t blocks = -1; // with 16-bit weights or not, a bias or not: the fewest (a launch may run any)
    for (bool iow : {false, true})
        for (bool bias : {false, true}) {
            if (iow && dt == DType::kFloat32) continue;
            withKernel(dt, norm, variant, skip, bias, iow, hidden, [&](auto kernel, unsigned threads, int) {
                const int32_t n = residentBlocks(kernel, threads);
                blocks = blocks < 0 ? n : std::min(blocks, n);
                return cudaSuccess;
            });
        }
    return std::max(blocks, 0);
}

int skipNormCandidates(DType dt, Norm norm, bool skip, int64_t hidden, int32_t* out, int cap) {
    int n = 0;
    for (int32_t v = 0; v <= kAllBits; ++v)
        if (feasible(v, dt, norm, skip, hidden) && n++ < cap && out) out[n - 1] = v;
    return n;
}

cudaError_t launchSkipNorm(DType dt, const SkipNormArgs& args, cudaStream_t stream) {
    if (args.rows < 0 || args.hidden < 1 || !(args.epsilon >= 0.f) || args.skipRows < 0) return cudaErrorInvalidValue;
    if (args.norm != Norm::kLayer && args.norm != Norm::kRms) return cudaErrorInvalidValue;
    if (args.rows == 0) return cudaSuccess;
    if (!args.x || !args.y || !args.gamma) return cudaErrorInvalidValue;
    if (args.rows > INT64_MAX / args.hidden) return cudaErrorInvalidValue;
    const int es = elemSize(dt), vw = vecOf(es);
    // Packs need 16-byte aligned pointers; a broadcast skip row starts where x's row does only when
    // rows are whole packs.
    if (args.gammaIo && (!aligned16(args.gammaIo) || (args.beta && (!args.betaIo || !aligned16(args.betaIo)))))
        return cudaErrorInvalidValue;
    const bool vec = aligned16(args.x) && aligned16(args.y) && aligned16(args.gamma) &&
                     (!args.skip || aligned16(args.skip)) && (!args.sum || aligned16(args.sum)) &&
                     (!args.bias || aligned16(args.bias)) && (!args.beta || aligned16(args.beta)) &&
                     (!args.skip || !args.skipRows || args.skipRows >= args.rows || args.hidden % vw == 0);
    const bool skip = args.skip != nullptr;
    // 16-bit weight copies serve rows that are whole aligned packs (every row, when the first is)
    const bool io = args.gammaIo && es == 2 && vec && args.hidden % vw == 0;
    const bool small = skipNormSmall(args.rows, args.hidden);
    int32_t v = small ? args.smallVariant : args.variant;
    if (!feasible(v, dt, args.norm, skip, args.hidden) || (isVec(v) && !vec))
        v = pick(es, dt == DType::kBFloat16, args.norm, skip, args.hidden, vec, io, small);
    const bool iow = io && isVec(v) && nvIndex(v) != kLong;
    return dispatchDType(dt, [&](auto tag) -> cudaError_t {
        using T = decltype(tag);
        const Row<T> a{static_cast<const T*>(args.x), static_cast<const T*>(args.skip), args.bias, args.gamma,
                       args.beta, static_cast<T*>(args.y), static_cast<T*>(args.sum), args.rows, args.hidden,
                       args.skipRows, args.epsilon, static_cast<const T*>(args.gammaIo), static_cast<const T*>(args.betaIo)};
        auto go = [&](auto kernel, unsigned threads, int perBlock) {
            int64_t grid = ceilDiv(a.rows, perBlock);
            if (isPrefetch(v)) {
                const int32_t resident = args.maxBlocks ? args.maxBlocks : residentBlocks(kernel, threads);
                if (resident > 0 && resident < grid) grid = resident;
            }
            return launchKernel(kernel, gridFor(grid), threads, stream, a);
        };
        const bool bias = args.bias != nullptr;
        return args.norm == Norm::kLayer ? withKernel<T, Norm::kLayer>(v, skip, bias, iow, args.hidden, go)
                                         : withKernel<T, Norm::kRms>(v, skip, bias, iow, args.hidden, go);
    });
}

} // namespace trtp
