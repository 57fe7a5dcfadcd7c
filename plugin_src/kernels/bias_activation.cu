// y = act(x + bias): an elementwise kernel over the flat tensor, FP32 math.
// Fast path: 16-byte accesses, UNROLL independent loads in flight per thread. Fallback: one
// element per access (unaligned pointers or hidden not a multiple of the vector width).
#include "bias_activation.h"
#include "activations.cuh"
#include "common.cuh"

#include <algorithm>

namespace trtp {
namespace {

using namespace detail;

constexpr int kThreads = 256;
constexpr int kUnroll = 4;

// Thread `g` handles packs g, g + S, g + 2S, ... (S = total threads), UNROLL at a time. The
// column of each pack advances by a fixed step mod hidden, so no division in the loop.
// step = (S * VEC) % hidden and stepU = (S * VEC * UNROLL) % hidden come from the host: 64-bit
// division on the device is a long dependent chain that small launches pay in full.
template <class T, int VEC, bool BIAS, Activation A>
__global__ void __launch_bounds__(kThreads) biasActKernel(const T* x, const float* __restrict__ bias, T* y,
                                                          int64_t npacks, int64_t hidden, int64_t step,
                                                          int64_t stepU) {
    const int64_t stride = int64_t(gridDim.x) * kThreads;
    int64_t p = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    int64_t col = 0;
    if constexpr (BIAS) // one 32-bit remainder per thread where it fits: 64-bit division is a long chain
        col = p * VEC < (int64_t(1) << 32) ? int64_t(unsigned(p * VEC) % unsigned(hidden)) : p * VEC % hidden;
    for (; p < npacks; p += stride * kUnroll) {
        Pack<T, VEC> in[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k)
            if (p + k * stride < npacks) in[k] = load<T, VEC>(x + (p + k * stride) * VEC);
        int64_t c = col;
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            if (p + k * stride < npacks) {
                float f[VEC];
                unpack(in[k], f);
                if constexpr (BIAS) {
                    float b[VEC];
                    loadWeights<VEC>(bias + c, b);
#pragma unroll
                    for (int i = 0; i < VEC; ++i) f[i] += b[i];
                }
#pragma unroll
                for (int i = 0; i < VEC; ++i) f[i] = activate<A, sizeof(T) == 4>(f[i]);
                store<T, VEC>(y + (p + k * stride) * VEC, f);
            }
            if constexpr (BIAS) {
                c += step;
                if (c >= hidden) c -= hidden;
            }
        }
        if constexpr (BIAS) {
            col += stepU;
            if (col >= hidden) col -= hidden;
        }
    }
}

// One pass of the grid covers the tensor (kUnroll packs per thread); no device query on this path.
// Small tensors spread over up to kSpread blocks, a pack per thread: a small launch lasts as long as
// its longest thread's chain of loads and math.
constexpr int64_t kSpread = 128;
template <class T, int VEC, bool BIAS, Activation A>
cudaError_t launchTyped(const T* x, const float* bias, T* y, int64_t n, int64_t hidden, cudaStream_t stream) {
    const int64_t npacks = n / VEC;
    int64_t blocks = ceilDiv(npacks, int64_t(kThreads) * kUnroll);
    if (blocks < kSpread) blocks = std::min(ceilDiv(npacks, int64_t(kThreads)), kSpread);
    const unsigned grid = gridFor(blocks);
    const int64_t stride = int64_t(grid) * kThreads;
    return launchKernel(biasActKernel<T, VEC, BIAS, A>, grid, kThreads, stream, x, bias, y, npacks, hidden,
                        stride * VEC % hidden, stride * VEC * kUnroll % hidden);
}

template <class T, int VEC, bool BIAS>
cudaError_t byAct(Activation act, const T* x, const float* bias, T* y, int64_t n, int64_t h, cudaStream_t s) {
    switch (act) {
    case Activation::kIdentity: return launchTyped<T, VEC, BIAS, Activation::kIdentity>(x, bias, y, n, h, s);
    case Activation::kRelu: return launchTyped<T, VEC, BIAS, Activation::kRelu>(x, bias, y, n, h, s);
    case Activation::kRelu6: return launchTyped<T, VEC, BIAS, Activation::kRelu6>(x, bias, y, n, h, s);
    case Activation::kGelu: return launchTyped<T, VEC, BIAS, Activation::kGelu>(x, bias, y, n, h, s);
    case Activation::kGeluTanh: return launchTyped<T, VEC, BIAS, Activation::kGeluTanh>(x, bias, y, n, h, s);
    case Activation::kSilu: return launchTyped<T, VEC, BIAS, Activation::kSilu>(x, bias, y, n, h, s);
    case Activation::kQuickGelu: return launchTyped<T, VEC, BIAS, Activation::kQuickGelu>(x, bias, y, n, h, s);
    case Activation::kHardSwish: return launchTyped<T, VEC, BIAS, Activation::kHardSwish>(x, bias, y, n, h, s);
    }
    return cudaErrorInvalidValue;
}

template <class T, int VEC>
cudaError_t byBias(Activation act, const T* x, const float* bias, T* y, int64_t n, int64_t h, cudaStream_t s) {
    return bias ? byAct<T, VEC, true>(act, x, bias, y, n, h, s) : byAct<T, VEC, false>(act, x, bias, y, n, h, s);
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
        // Packs never straddle a row when bias is read per column; without bias only the total matters.
        const bool vec = (bias ? hidden % kVec == 0 && aligned16(bias) : n % kVec == 0) && aligned16(x) && aligned16(y);
        return vec ? byBias<T, kVec>(act, xt, bias, yt, n, hidden, stream)
                   : byBias<T, 1>(act, xt, bias, yt, n, hidden, stream);
    });
}

} // namespace trtp
