// y = act(x + bias): an elementwise kernel over the flat tensor, FP32 math.
// Fast path (x and y 16-byte aligned): 16-byte accesses, kUnroll independent loads in flight per thread,
// for any hidden: a pack may straddle two rows (its bias wraps to column 0), the last n % VEC elements
// are one each of block 0's first threads. Fallback: one element per access (unaligned x or y).
#include "bias_activation.h"
#include "activations.cuh"
#include "common.cuh"

#include <algorithm>

namespace trtp {
namespace {

using namespace detail;

constexpr int kThreads = 256;
constexpr int kUnroll = 2; // packs in flight per thread (1 on small launches: half the code to fetch)

// How a pack reads its bias: none; aligned float4s (hidden a multiple of VEC, bias 16-byte aligned);
// from any column, wrapping at the row's end.
enum class BiasRead { kNone, kPacks, kAny };

// bias[c], bias[c + 1], ... for a pack at column c, wrapping to column 0 at `hidden`.
template <int VEC>
__device__ __forceinline__ void biasFrom(const float* __restrict__ bias, int64_t c, int64_t hidden, float (&b)[VEC]) {
    if (c + VEC <= hidden) return loadWeightsAt<VEC>(bias, c, hidden, b);
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
        b[i] = __ldg(bias + c);
        if (++c == hidden) c = 0;
    }
}

// Thread `g` handles packs g, g + S, g + 2S, ... (S = total threads), U at a time. The
// column of each pack advances by a fixed step mod hidden, so no division in the loop.
// step = (S * VEC) % hidden and stepU = (S * VEC * U) % hidden come from the host: 64-bit
// division on the device is a long dependent chain that small launches pay in full.
// The `tail` elements after the last whole pack (fewer than VEC) are one each of block 0's first threads.
template <class T, int VEC, BiasRead B, Activation A, int U>
__global__ void __launch_bounds__(kThreads) biasActKernel(const T* x, const float* __restrict__ bias, T* y,
                                                          int64_t npacks, int64_t hidden, int64_t step,
                                                          int64_t stepU, int tail) {
    const int64_t stride = int64_t(gridDim.x) * kThreads;
    int64_t p = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    // one 32-bit remainder per thread where it fits: 64-bit division is a long chain
    auto colOf = [&](int64_t e) { return e < (int64_t(1) << 32) ? int64_t(unsigned(e) % unsigned(hidden)) : e % hidden; };
    if (blockIdx.x == 0 && threadIdx.x < tail) { // before the loop: its loads overlap the packs'
        const int64_t e = npacks * VEC + threadIdx.x;
        float f = toFloat(x[e]);
        if constexpr (B != BiasRead::kNone) f += __ldg(bias + colOf(e));
        y[e] = fromFloat<T>(activate<A, sizeof(T) == 4>(f));
    }
    int64_t col = 0;
    if constexpr (B != BiasRead::kNone) col = colOf(p * VEC);
    for (; p < npacks; p += stride * U) {
        Pack<T, VEC> in[U];
#pragma unroll
        for (int k = 0; k < U; ++k)
            if (p + k * stride < npacks) in[k] = load<T, VEC>(x + (p + k * stride) * VEC);
        int64_t c = col;
#pragma unroll
        for (int k = 0; k < U; ++k) {
            if (p + k * stride < npacks) {
                float f[VEC];
                unpack(in[k], f);
                if constexpr (B != BiasRead::kNone) {
                    float b[VEC];
                    if constexpr (B == BiasRead::kPacks) loadWeights<VEC>(bias + c, b);
                    else biasFrom<VEC>(bias, c, hidden, b);
#pragma unroll
                    for (int i = 0; i < VEC; ++i) f[i] += b[i];
                }
#pragma unroll
                for (int i = 0; i < VEC; ++i) f[i] = activate<A, sizeof(T) == 4>(f[i]);
                store<T, VEC>(y + (p + k * stride) * VEC, f);
            }
            if constexpr (B != BiasRead::kNone) {
                c += step;
                if (c >= hidden) c -= hidden;
            }
        }
        if constexpr (B != BiasRead::kNone) {
            col += stepU;
            if (col >= hidden) col -= hidden;
        }
    }
}

// One pass of the grid covers the tensor (kUnroll packs per thread); no device query on this path.
// Small tensors spread over up to kSpread blocks, a pack per thread: a small launch lasts as long as
// its longest thread's chain of loads and math. Where every thread has at most one pack, the kernel
// without the unrolled loads runs (U = 1: a quarter of the code for a cold SM to fetch).
constexpr int64_t kSpread = 128;
template <class T, int VEC, BiasRead B, Activation A>
cudaError_t launchTyped(const T* x, const float* bias, T* y, int64_t n, int64_t hidden, cudaStream_t stream) {
    const int64_t npacks = n / VEC;
    const int tail = int(n - npacks * VEC);
    int64_t blocks = ceilDiv(npacks, int64_t(kThreads) * kUnroll);
    if (blocks < kSpread) blocks = std::max<int64_t>(std::min(ceilDiv(npacks, int64_t(kThreads)), kSpread), 1);
    const unsigned grid = gridFor(blocks);
    const int64_t stride = int64_t(grid) * kThreads, step = stride * VEC % hidden;
    if (npacks <= stride) // at most one pack per thread
        return launchKernel(biasActKernel<T, VEC, B, A, 1>, grid, kThreads, stream, x, bias, y, npacks, hidden, step,
                            step, tail);
    return launchKernel(biasActKernel<T, VEC, B, A, kUnroll>, grid, kThreads, stream, x, bias, y, npacks, hidden, step,
                        stride * VEC * kUnroll % hidden, tail);
}

template <class T, int VEC, BiasRead B>
cudaError_t byAct(Activation act, const T* x, const float* bias, T* y, int64_t n, int64_t h, cudaStream_t s) {
    switch (act) {
    case Activation::kIdentity: return launchTyped<T, VEC, B, Activation::kIdentity>(x, bias, y, n, h, s);
    case Activation::kRelu: return launchTyped<T, VEC, B, Activation::kRelu>(x, bias, y, n, h, s);
    case Activation::kRelu6: return launchTyped<T, VEC, B, Activation::kRelu6>(x, bias, y, n, h, s);
    case Activation::kGelu: return launchTyped<T, VEC, B, Activation::kGelu>(x, bias, y, n, h, s);
    case Activation::kGeluTanh: return launchTyped<T, VEC, B, Activation::kGeluTanh>(x, bias, y, n, h, s);
    case Activation::kSilu: return launchTyped<T, VEC, B, Activation::kSilu>(x, bias, y, n, h, s);
    case Activation::kQuickGelu: return launchTyped<T, VEC, B, Activation::kQuickGelu>(x, bias, y, n, h, s);
    case Activation::kHardSwish: return launchTyped<T, VEC, B, Activation::kHardSwish>(x, bias, y, n, h, s);
    }
    return cudaErrorInvalidValue;
}

template <class T, int VEC>
cudaError_t byBias(Activation act, const T* x, const float* bias, T* y, int64_t n, int64_t h, cudaStream_t s) {
    if (!bias) return byAct<T, VEC, BiasRead::kNone>(act, x, bias, y, n, h, s);
    if constexpr (VEC > 1) {
        if (h % VEC || !aligned16(bias)) return byAct<T, VEC, BiasRead::kAny>(act, x, bias, y, n, h, s);
    }
    return byAct<T, VEC, BiasRead::kPacks>(act, x, bias, y, n, h, s);
}

} // namespace

cudaError_t launchBiasActivation(DType dt, const void* x, const float* bias, void* y, int64_t rows, int64_t hidden,
                                 Activation act, cudaStream_t stream) {
    if (rows < 0 || hidden < 1 || unsigned(act) > unsigned(Activation::kHardSwish)) return cudaErrorInvalidValue;
    if (rows == 0) return cudaSuccess;
    if (!x || !y) return cudaErrorInvalidValue;
    if (rows > INT64_MAX / hidden) return cudaErrorInvalidValue;
    const int64_t n = rows * hidden;
    return detail::dispatchDType(dt, [&](auto tag) -> cudaError_t {
        using T = decltype(tag);
        constexpr int kVec = IoSize<T>::kVec;
        const T* xt = static_cast<const T*>(x);
        T* yt = static_cast<T*>(y);
        return aligned16(x) && aligned16(y) ? byBias<T, kVec>(act, xt, bias, yt, n, hidden, stream)
                                            : byBias<T, 1>(act, xt, bias, yt, n, hidden, stream);
    });
}

} // namespace trtp
