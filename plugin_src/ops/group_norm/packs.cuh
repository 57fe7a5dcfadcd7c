// Device code both GroupNorm designs share: a fast divider, 16-byte packs to and from FP32, evict-first
// stores, a block's sums, copies into shared memory, and the activation.
#pragma once
#include "activations.cuh"
#include "common.cuh"

#include <cooperative_groups.h>
#include <type_traits>

namespace trtp {
namespace {

using namespace detail;

// SiLU as every kernel of the suite applies it (exp overflow -> 0, the right limit).
__device__ __forceinline__ float silu(float v) { return activate<Activation::kSilu, true>(v); }

// f(std::true_type) where the activation is SiLU, else f(std::false_type): one branch per walk, not one
// per element (a branch per element keeps each element's exp and reciprocal from overlapping the next's).
template <class F> __device__ __forceinline__ void withSilu(GroupNormAct act, F&& f) {
    if (act == GroupNormAct::kSilu) f(std::true_type{});
    else f(std::false_type{});
}

// n / d for 0 <= n < 2^31 (Granlund-Montgomery, as PyTorch's IntDivider).
struct FastDiv {
    uint32_t m = 1, s = 0;
    FastDiv() = default;
    explicit FastDiv(uint32_t d) {
        while ((uint64_t(1) << s) < d) ++s;
        m = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << s) - d)) / d + 1);
    }
    __device__ __forceinline__ uint32_t div(uint32_t n) const { return (__umulhi(n, m) + n) >> s; }
};

// 16-bit packs converted two at a time (a pack stays in 4 registers; one at a time spilled).
template <class T> __device__ __forceinline__ float2 pairToFloat2(uint32_t w) {
    if constexpr (std::is_same_v<T, __half>) return __half22float2(*reinterpret_cast<const __half2*>(&w));
    else return make_float2(__uint_as_float(w << 16), __uint_as_float(w & 0xffff0000u)); // BF16
}

template <class T> __device__ __forceinline__ uint32_t float2ToPair(float a, float b) {
    if constexpr (std::is_same_v<T, __half>) {
        const __half2 h = __floats2half2_rn(a, b);
        return *reinterpret_cast<const uint32_t*>(&h);
    } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
        return *reinterpret_cast<const uint32_t*>(&h);
    }
}

template <class T, int VEC> __device__ __forceinline__ void toFloats(const Pack<T, VEC>& p, float (&f)[VEC]) {
    if constexpr (sizeof(T) == 2 && VEC % 2 == 0) {
        const uint32_t* w = reinterpret_cast<const uint32_t*>(p.v);
#pragma unroll
        for (int i = 0; i < VEC / 2; ++i) {
            const float2 v = pairToFloat2<T>(w[i]);
            f[2 * i] = v.x, f[2 * i + 1] = v.y;
        }
    } else {
        unpack(p, f);
    }
}

// 16-byte packs stored evict-first (st.global.cs): y and the sum are not read again here, while x
// still is (pass 2 re-reads it from L2; evicting x for y would send those reads to DRAM).
template <class T, int VEC> __device__ __forceinline__ void storeFloats(T* dst, const float (&f)[VEC]) {
    if constexpr (sizeof(T) == 2 && VEC == 8) {
        uint32_t w[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) w[i] = float2ToPair<T>(f[2 * i], f[2 * i + 1]);
        __stcs(reinterpret_cast<uint4*>(dst), make_uint4(w[0], w[1], w[2], w[3]));
    } else if constexpr (sizeof(T) == 4 && VEC == 4) {
        __stcs(reinterpret_cast<float4*>(dst), make_float4(f[0], f[1], f[2], f[3]));
    } else {
        store<T, VEC>(dst, f);
    }
}

// One channel's pack at offset o: stores s there in sum (when given) and y = act((s - mean) * sc + sh).
template <bool SILU, class T, int VEC, class I>
__device__ __forceinline__ void storeNormalized(T* y, T* sum, I o, const float (&s)[VEC], float mean, float sc, float sh) {
    if (sum) storeFloats<T, VEC>(sum + o, s);
    float w[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
        w[e] = fmaf(s[e] - mean, sc, sh);
        if constexpr (SILU) w[e] = silu(w[e]);
    }
    storeFloats<T, VEC>(y + o, w);
}

// Sums of two values over the block, in a fixed order; every thread gets them. `red`: 2 x 32 floats,
// free again when this returns.
__device__ __forceinline__ float2 blockSum2(float a, float b, float (*red)[32]) {
    a = warpSum(a);
    b = warpSum(b);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) red[0][warp] = a, red[1][warp] = b;
    __syncthreads();
    const int nw = blockDim.x >> 5;
    a = warpSum(lane < nw ? red[0][lane] : 0.f);
    b = warpSum(lane < nw ? red[1][lane] : 0.f);
    __syncthreads();
    return make_float2(a, b);
}

// Starts copying one pack from global src to shared dst: a 16-byte cp.async (sm_80+; in flight until
// waitStaged()), else a copy.
template <class T, int VEC> __device__ __forceinline__ void stageOne(T* dst, const T* src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    constexpr bool kAsync = VEC * sizeof(T) == 16;
#else
    constexpr bool kAsync = false;
#endif
    if constexpr (kAsync) {
        const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
    } else {
        *reinterpret_cast<Pack<T, VEC>*>(dst) = load<T, VEC>(src);
    }
}

// Starts copying n elements from global src to shared dst, a pack per thread and step (every copy of
// the block in flight at once where asynchronous).
template <class T, int VEC> __device__ __forceinline__ void stage(T* dst, const T* src, int32_t n) {
    for (int32_t j = int32_t(threadIdx.x) * VEC; j < n; j += int32_t(blockDim.x) * VEC) stageOne<T, VEC>(dst + j, src + j);
}

// Starts copying n elements to shared dst from rows of src, `packs` packs of row r from src + r * stride,
// consecutively: a window's channels of each pixel.
template <class T, int VEC>
__device__ __forceinline__ void stageRows(T* dst, const T* src, int32_t n, int32_t packs, const FastDiv& packsDiv, int32_t stride) {
    for (int32_t k = int32_t(threadIdx.x); k * VEC < n; k += int32_t(blockDim.x)) {
        const int32_t r = int32_t(packsDiv.div(uint32_t(k)));
        stageOne<T, VEC>(dst + int64_t(k) * VEC, src + int64_t(r) * stride + int64_t(k - r * packs) * VEC);
    }
}

// Waits for this thread's copies into shared memory (visible to it alone until a barrier).
__device__ __forceinline__ void waitOwnStaged() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// Waits for every copy of the block into shared memory.
__device__ __forceinline__ void waitStaged() {
    waitOwnStaged();
    __syncthreads();
}

// The thread-block cluster's barrier (release / acquire: the memory writes before it are visible after it).
__device__ __forceinline__ void clusterBarrier() {
#if __CUDA_ARCH__ >= 900
    cooperative_groups::this_cluster().sync();
#else
    __trap(); // never launched: cluster launches run only where groupNormDevice() finds an sm_90+ image
#endif
}

} // namespace
} // namespace trtp
