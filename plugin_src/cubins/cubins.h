// Kernels compiled ahead of time outside nvcc (Triton: plugin_src/triton_aot.py), embedded in the
// kernel library as cubins and launched through the CUDA runtime's library API (no Triton, no JIT at
// run time). The table is generated (cubins_<build>.cpp); a build without the generator has none.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace trtp {

struct Cubin {
    int32_t op;        // CubinOp
    int32_t form;      // the op's form (SkipNorm: CubinSkipNormForm)
    int32_t dtype;     // DType of the I/O
    int64_t hidden;    // the size it was compiled for
    int32_t small;     // 1: for launches of few rows (triton_aot.py small_config), 0: for large ones
    int32_t arch;      // SM version, e.g. 90
    int32_t xblock;    // rows per program: grid = ceil(rows / xblock)
    int32_t warps;     // block = 32 * warps threads
    int32_t shared;    // dynamic shared memory, bytes
    int32_t picked;    // CubinPicked bits: measured faster on this arch than the hand-written kernels with those weights
    const char* symbol;
    const unsigned char* image;
    size_t size;
};

enum CubinOp : int32_t { kCubinSkipNorm = 0 };
// triton_aot.py PICK_WEIGHTS: the plugin's pick against the kernels with FP32 weights, or with their 16-bit copies
enum CubinPicked : int32_t { kCubinPickedFp32Weights = 1, kCubinPickedIoWeights = 2 };
// triton_aot.py FORMS, in its order
enum CubinSkipNormForm : int32_t {
    kCubinLayerNorm = 0,
    kCubinRmsNorm = 1,
    kCubinSkipLayerNorm = 2,
    kCubinSkipRmsNorm = 3,
    kCubinSkipLayerNormNoSum = 4,
};

// Sorted by (arch, op, form, dtype, hidden, small), as findCubin searches it.
extern const Cubin kCubins[];
extern const int32_t kCubinCount;

// The cubin for (op, form, dtype, hidden, small) built for the current device's architecture; nullptr if none.
const Cubin* findCubin(int32_t op, int32_t form, int32_t dtype, int64_t hidden, bool small = false) noexcept;

// Launches c with its parameters `args` (pointers to each value, in order; the two scratch pointers
// Triton appends are added here) over `grid` programs. Never throws.
cudaError_t launchCubin(const Cubin& c, unsigned grid, void** args, int nargs, cudaStream_t stream) noexcept;

} // namespace trtp
