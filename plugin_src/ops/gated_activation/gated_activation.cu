// y = act(gate + gate_bias) * (linear + linear_bias): a streaming kernel (read two operands, write
// one), FP32 math. Fast path: 16-byte accesses, UNROLL packs of each operand in flight per thread.
// Fallback: one element per access (unaligned pointers, or a width not a multiple of the vector).
// The halves of one tensor are rows `ld` = 2 width apart; two tensors are read as flat arrays
// unless a bias needs the column.
#include "gated_activation.h"
#include "activations.cuh"
#include "common.cuh"

namespace trtp {
namespace {

using namespace detail;

constexpr int kThreads = 256;
constexpr int kUnroll = 4;

template <class T> struct Operands {
    const T* gate;
    const T* linear;
    const float* gateBias;
    const float* linearBias;
    T* y;
};

// Thread `g` handles packs g, g + S, g + 2S, ... (S = total threads), UNROLL at a time. ROWS: the
// column and input offset of each pack are tracked (biases, or operands in halves of rows).
template <class T, int VEC, Activation A, bool ROWS>
__global__ void __launch_bounds__(kThreads) gatedKernel(Operands<T> o, int64_t npacks, int64_t width, int64_t ld,
                                                        RowPos::Step step, RowPos::Step stepU) {
    const int64_t stride = int64_t(gridDim.x) * kThreads;
    int64_t p = int64_t(blockIdx.x) * kThreads + threadIdx.x;
    RowPos pos;
    if constexpr (ROWS) pos = RowPos(p * VEC, width, ld);
    for (; p < npacks; p += stride * kUnroll) {
        RowPos at[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            if constexpr (ROWS) {
                at[k] = k ? at[k - 1] : pos;
                if (k) at[k].advance(step, width, ld);
            } else {
                at[k].off = (p + k * stride) * VEC;
            }
        }
        Pack<T, VEC> g[kUnroll], l[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            if (p + k * stride < npacks) {
                g[k] = load<T, VEC>(o.gate + at[k].off);
                l[k] = load<T, VEC>(o.linear + at[k].off);
            }
        }
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            if (p + k * stride < npacks) {
                float a[VEC], b[VEC];
                unpack(g[k], a);
                unpack(l[k], b);
                if constexpr (ROWS) {
                    addWeights(o.gateBias, at[k].col, a);
                    addWeights(o.linearBias, at[k].col, b);
                }
#pragma unroll
                for (int i = 0; i < VEC; ++i) a[i] = activate<A, sizeof(T) == 4>(a[i]) * b[i];
                store<T, VEC>(o.y + (p + k * stride) * VEC, a);
            }
        }
        if constexpr (ROWS) pos.advance(stepU, width, ld);
    }
}

// One pass of the grid covers the tensor (kUnroll packs per thread); no device query on this path.
template <class T, int VEC, bool ROWS, Activation A>
cudaError_t launchTyped(const Operands<T>& o, int64_t n, int64_t width, int64_t ld, cudaStream_t stream) {
    const int64_t npacks = n / VEC;
    const unsigned grid = gridFor(ceilDiv(npacks, int64_t(kThreads) * kUnroll));
    const int64_t stride = int64_t(grid) * kThreads;
    return launchKernel(gatedKernel<T, VEC, A, ROWS>, grid, kThreads, stream, o, npacks, width, ld,
                        RowPos::step(stride * VEC, width, ld), RowPos::step(stride * VEC * kUnroll, width, ld));
}

template <class T, int VEC, bool ROWS>
cudaError_t byAct(Activation act, const Operands<T>& o, int64_t n, int64_t width, int64_t ld, cudaStream_t s) {
    switch (act) {
    case Activation::kRelu: return launchTyped<T, VEC, ROWS, Activation::kRelu>(o, n, width, ld, s);
    case Activation::kGelu: return launchTyped<T, VEC, ROWS, Activation::kGelu>(o, n, width, ld, s);
    case Activation::kGeluTanh: return launchTyped<T, VEC, ROWS, Activation::kGeluTanh>(o, n, width, ld, s);
    case Activation::kSilu: return launchTyped<T, VEC, ROWS, Activation::kSilu>(o, n, width, ld, s);
    default: return cudaErrorInvalidValue;
    }
}

} // namespace

cudaError_t launchGatedActivation(DType dt, const GatedActivationArgs& a, cudaStream_t stream) {
    const bool known = a.act == Activation::kRelu || a.act == Activation::kGelu || a.act == Activation::kGeluTanh ||
                       a.act == Activation::kSilu;
    if (a.rows < 0 || a.width < 1 || !known || unsigned(a.gate) > unsigned(GateOperand::kSecond))
        return cudaErrorInvalidValue;
    if (a.rows == 0) return cudaSuccess;
    if (!a.x || !a.y || a.width > INT64_MAX / 2 || a.rows > INT64_MAX / (2 * a.width)) return cudaErrorInvalidValue;
    const int64_t n = a.rows * a.width;
    const bool halves = a.x2 == nullptr;
    const int64_t ld = halves ? 2 * a.width : a.width;
    return detail::dispatchDType(dt, [&](auto tag) -> cudaError_t {
        using T = decltype(tag);
        constexpr int kVec = IoSize<T>::kVec;
        const T* first = static_cast<const T*>(a.x);
        const T* second = halves ? first + a.width : static_cast<const T*>(a.x2);
        const bool gateFirst = a.gate == GateOperand::kFirst;
        const Operands<T> o{gateFirst ? first : second, gateFirst ? second : first, a.gateBias, a.linearBias,
                            static_cast<T*>(a.y)};
        // Packs never straddle a row when columns matter; two plain tensors need only a whole number of packs.
        const bool rows = halves || a.gateBias || a.linearBias;
        const bool vec = (rows ? a.width % kVec == 0 : n % kVec == 0) && aligned16(a.x) && aligned16(second) &&
                         aligned16(a.y) && (!a.gateBias || aligned16(a.gateBias)) &&
                         (!a.linearBias || aligned16(a.linearBias));
        if (rows) return vec ? byAct<T, kVec, true>(a.act, o, n, a.width, ld, stream)
                             : byAct<T, 1, true>(a.act, o, n, a.width, ld, stream);
        return vec ? byAct<T, kVec, false>(a.act, o, n, a.width, ld, stream)
                   : byAct<T, 1, false>(a.act, o, n, a.width, ld, stream);
    });
}

} // namespace trtp
