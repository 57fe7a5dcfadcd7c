// Private kernel helpers: dtype conversion, 16-byte packs, reductions, launch sizing.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <utility>

#include "types.h"

namespace trtp {
namespace detail {

__device__ __forceinline__ float toFloat(float v) { return v; }
__device__ __forceinline__ float toFloat(__half v) { return __half2float(v); }
__device__ __forceinline__ float toFloat(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T> __device__ __forceinline__ T fromFloat(float v);
template <> __device__ __forceinline__ float fromFloat<float>(float v) { return v; }
template <> __device__ __forceinline__ __half fromFloat<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// N elements moved as one access (16 bytes when N == 16 / sizeof(T)).
template <class T, int N> struct alignas(sizeof(T) * N) Pack {
    T v[N];
};

template <class T, int N> __device__ __forceinline__ Pack<T, N> load(const T* p) {
    return *reinterpret_cast<const Pack<T, N>*>(p);
}

template <class T, int N> __device__ __forceinline__ void unpack(const Pack<T, N>& pk, float (&f)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) f[i] = toFloat(pk.v[i]);
}

template <class T, int N> __device__ __forceinline__ void store(T* p, const float (&f)[N]) {
    Pack<T, N> pk;
#pragma unroll
    for (int i = 0; i < N; ++i) pk.v[i] = fromFloat<T>(f[i]);
    // One weak 16-byte store: NVVM splits a plain one into 4-byte stores where it loses the alignment,
    // and __stwb's st.global.wb is a strong store in SASS (STG.E.128.STRONG.SM).
    if constexpr (sizeof(pk) == 16) {
        const uint4 u = *reinterpret_cast<const uint4*>(&pk);
        asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(u.x), "r"(u.y), "r"(u.z), "r"(u.w) : "memory");
    } else {
        *reinterpret_cast<Pack<T, N>*>(p) = pk;
    }
}

// A 16-byte load under an L2 eviction policy (sm_80+; a plain load before): KEEP marks the line
// evict-last (a second read of it follows soon), else evict-first (its last read).
template <bool KEEP, class T, int N> __device__ __forceinline__ Pack<T, N> loadL2(const T* p) {
    static_assert(sizeof(Pack<T, N>) == 16, "16-byte packs");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint64_t pol;
    if constexpr (KEEP) asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
    else asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    uint4 u;
    asm volatile("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(p), "l"(pol));
    Pack<T, N> pk;
    *reinterpret_cast<uint4*>(&pk) = u;
    return pk;
#else
    return load<T, N>(p);
#endif
}

// Starts bringing the line at p into L2 (marked evict-last on sm_80+); no register waits on it.
__device__ __forceinline__ void prefetchL2(const void* p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(p));
#else
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#endif
}

// N FP32 weights (read-only path); float4 loads when N is a multiple of 4 (caller guarantees alignment).
template <int N> __device__ __forceinline__ void loadWeights(const float* __restrict__ p, float (&w)[N]) {
    if constexpr (N % 4 == 0) {
#pragma unroll
        for (int i = 0; i < N; i += 4) {
            const float4 q = __ldg(reinterpret_cast<const float4*>(p + i));
            w[i] = q.x, w[i + 1] = q.y, w[i + 2] = q.z, w[i + 3] = q.w;
        }
    } else {
#pragma unroll
        for (int i = 0; i < N; ++i) w[i] = __ldg(p + i);
    }
}

// w[c], ..., w[c + N - 1] of an FP32 array of `len` weights, any c and any 4-byte aligned w: the aligned
// float4s that cover them (N / 4 + 1 loads, N / 4 where already aligned), shifted into place by two
// rounds of selects; plain loads where those float4s would reach outside w[0, len). One float per load
// costs N L1 requests per N values, and L1, not DRAM, then limits a 16-bit stream (odd row lengths).
template <int N>
__device__ __forceinline__ void loadWeightsAt(const float* __restrict__ w, int64_t c, int64_t len, float (&out)[N]) {
    static_assert(N % 4 == 0, "whole float4s");
    const int r = int(reinterpret_cast<uintptr_t>(w + c) >> 2) & 3; // floats past the last 16-byte boundary
    if (c < r || c - r + N + (r ? 4 : 0) > len) {
#pragma unroll
        for (int i = 0; i < N; ++i) out[i] = __ldg(w + c + i);
        return;
    }
    const float4* q = reinterpret_cast<const float4*>(w + c - r);
    float v[N + 4];
#pragma unroll
    for (int k = 0; k <= N / 4; ++k) {
        const float4 f = k < N / 4 || r ? __ldg(q + k) : make_float4(0.f, 0.f, 0.f, 0.f);
        v[4 * k] = f.x, v[4 * k + 1] = f.y, v[4 * k + 2] = f.z, v[4 * k + 3] = f.w;
    }
    float u[N + 2];
#pragma unroll
    for (int i = 0; i < N + 2; ++i) u[i] = r & 2 ? v[i + 2] : v[i];
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = r & 1 ? u[i + 1] : u[i];
}

// v[i] += w[col + i] for N FP32 weights (nullptr: nothing); the loadWeights alignment rule.
template <int N> __device__ __forceinline__ void addWeights(const float* __restrict__ w, int64_t col, float (&v)[N]) {
    if (!w) return;
    float b[N];
    loadWeights<N>(w + col, b);
#pragma unroll
    for (int i = 0; i < N; ++i) v[i] += b[i];
}

// Where element e of a rows x width tensor sits: its column, and its offset in a tensor whose rows
// are `ld` elements apart. Kernels advance it by fixed steps of elements (Step, from the host)
// instead of dividing in the loop: 64-bit division on the device is a long dependent chain.
struct RowPos {
    int64_t col, off;
    struct Step {
        int64_t col, off;
    };
    __device__ __forceinline__ RowPos() : col(0), off(0) {}
    // A 32-bit division where it fits.
    __device__ __forceinline__ RowPos(int64_t e, int64_t width, int64_t ld) {
        const bool small = e < (int64_t(1) << 32) && width < (int64_t(1) << 32);
        const int64_t row = small ? int64_t(unsigned(e) / unsigned(width)) : e / width;
        col = e - row * width;
        off = row * ld + col;
    }
    __device__ __forceinline__ void advance(const Step& s, int64_t width, int64_t ld) {
        col += s.col;
        off += s.off;
        if (col >= width) {
            col -= width;
            off += ld - width;
        }
    }
    static Step step(int64_t elems, int64_t width, int64_t ld) { return {elems % width, elems / width * ld + elems % width}; }
};

__device__ __forceinline__ float warpSum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Sum over the block; every thread gets the result. `red` holds one float per warp and must
// not be reused by the block until all threads have returned from this call.
__device__ __forceinline__ float blockSum(float v, float* red) {
    v = warpSum(v);
    const int warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    if ((threadIdx.x & 31) == 0) red[warp] = v;
    __syncthreads();
    float t = 0.f;
    for (int w = 0; w < nwarps; ++w) t += red[w];
    return t;
}

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

constexpr int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A 1-D grid of `blocks`, capped at the x-dimension limit (kernels then stride over the rest).
inline unsigned gridFor(int64_t blocks) {
    constexpr int64_t kMaxGrid = (int64_t(1) << 31) - 1;
    return unsigned(blocks < kMaxGrid ? blocks : kMaxGrid);
}

template <class T> struct IoSize {
    static constexpr int kVec = 16 / sizeof(T); // elements per 16-byte access
};

// A 1-D launch: `smem` dynamic shared memory bytes, `attrs` launch attributes (a cluster dimension, ...).
inline cudaLaunchConfig_t launchConfig(unsigned grid, unsigned block, size_t smem, cudaLaunchAttribute* attrs,
                                       unsigned nbAttrs, cudaStream_t stream) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(block);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = attrs;
    cfg.numAttrs = nbAttrs;
    return cfg;
}

// Launch with the status of this launch alone (a bad configuration, an invalid stream): unlike
// <<<>>> + cudaGetLastError, it neither reports nor clears asynchronous errors of earlier work.
template <class... P, class... A>
inline cudaError_t launchKernelWith(void (*kernel)(P...), unsigned grid, unsigned block, size_t smem,
                                    cudaLaunchAttribute* attrs, unsigned nbAttrs, cudaStream_t stream, A&&... args) {
    const cudaLaunchConfig_t cfg = launchConfig(grid, block, smem, attrs, nbAttrs, stream);
    return cudaLaunchKernelEx(&cfg, kernel, std::forward<A>(args)...);
}

template <class... P, class... A>
inline cudaError_t launchKernel(void (*kernel)(P...), unsigned grid, unsigned block, cudaStream_t stream, A&&... args) {
    return launchKernelWith(kernel, grid, block, 0, nullptr, 0, stream, std::forward<A>(args)...);
}

// A 1-D thread-block cluster of `size` CTAs (sm_90+): consecutive blockIdx.x form one cluster.
inline cudaLaunchAttribute clusterAttribute(unsigned size) {
    cudaLaunchAttribute a = {};
    a.id = cudaLaunchAttributeClusterDimension;
    a.val.clusterDim.x = size;
    a.val.clusterDim.y = 1;
    a.val.clusterDim.z = 1;
    return a;
}

template <class F> inline cudaError_t dispatchDType(DType dt, F&& f) {
    switch (dt) {
    case DType::kFloat32: return f(float{});
    case DType::kFloat16: return f(__half{});
    case DType::kBFloat16: return f(__nv_bfloat16{});
    }
    return cudaErrorInvalidValue;
}

} // namespace detail
} // namespace trtp
