// s = x (+ skip) (+ bias); y = norm(s) * gamma (+ beta): one launch, FP32 statistics.
#pragma once
#include <cuda_runtime_api.h>
#include <cstdint>

#include "types.h"

namespace trtp {

enum class Norm : int32_t { kLayer = 0, kRms = 1 };

struct SkipNormArgs {
    const void* x = nullptr;     // rows x hidden, dtype dt
    const void* skip = nullptr;  // nullptr, like x, or skipRows x hidden broadcast over x's rows
    const float* bias = nullptr; // nullptr or hidden FP32 values (device)
    const float* gamma = nullptr; // hidden FP32 values (device), required
    const float* beta = nullptr; // nullptr or hidden FP32 values (device)
    void* y = nullptr;           // like x
    void* sum = nullptr;         // nullptr or like x: receives s (rounded to dt)
    int64_t rows = 0;
    int64_t hidden = 0;
    int64_t skipRows = 0;        // 0: skip has `rows` rows; else row r of x adds skip row r % skipRows
    const void* gammaIo = nullptr; // optional: gamma and beta again in dt, exactly equal to the FP32 ones
    const void* betaIo = nullptr;  // (16-byte aligned; betaIo required with beta): half the weight bytes
    float epsilon = 0.f;          // > 0 (the op declaration holds its default)
    Norm norm = Norm::kLayer;
    int32_t variant = -1;        // skipNormVariant(...) chosen when configured; -1: chosen at launch
    int32_t smallVariant = -1;   // the same for small launches (skipNormSmall; skipNormVariant(..., true))
    int32_t maxBlocks = 0;       // skipNormMaxBlocks(...) measured when configured; 0: measured at launch;
                                 // < 0: not measured (a block per row group, no query)
};

// Launches of at most 2^20 elements run args.smallVariant: one block per row, a pack per thread, a
// shorter chain of latencies per row (H200: faster up to 1024 rows of 768, 256 rows of 4096).
constexpr int64_t kSkipNormSmallElems = int64_t(1) << 20;
constexpr bool skipNormSmall(int64_t rows, int64_t hidden) { return rows <= kSkipNormSmallElems / hidden; }

// The rows of a skip of dims s (ns of them) beside x (nx dims): 0 where it has x's rows, else how many rows
// repeat over x's leading dims (s is x's last dims, leading 1s allowed: [B, S, H] + [S, H] or [1, S, H]);
// -1 where it is neither. Dims < 0 (not known yet) match any; a skip with one of them counts as x's rows.
template <class I> int64_t skipNormSkipRows(const I* x, int32_t nx, const I* s, int32_t ns) {
    const int32_t off = nx - ns;
    if (ns < 1 || off < 0) return -1;
    bool known = true;
    int64_t rows = 1, xRows = 1;
    for (int32_t i = 0, lead = 1; i < nx; ++i) {
        const int64_t xd = x[i], sd = i >= off ? s[i - off] : 1;
        if (i >= off) lead = lead && sd == 1 && i < nx - 1; // s's leading 1s, never its last dim
        if (i >= off && !lead && xd >= 0 && sd >= 0 && xd != sd) return -1;
        known = known && xd >= 0 && sd >= 0;
        if (i < nx - 1) rows *= sd, xRows *= xd;
    }
    return !known || rows == xRows ? 0 : rows;
}

// Kernel variant for a dtype, norm, skip input or not, sum output or not, hidden size, whether launches give
// 16-bit weight copies (gammaIo) and whether it is for small launches (skipNormSmall): a table's answer
// (no allocation; the device's architecture asked once, for the AOT kernels' measured picks), so a
// plugin chooses both when it is configured and enqueue only launches.
int32_t skipNormVariant(DType dt, Norm norm, bool skip, bool sum, int64_t hidden, bool ioWeights = false,
                        bool small = false);
// The same among the CUDA kernels alone (what skipNormVariant returns where no AOT kernel is picked).
int32_t skipNormCudaVariant(DType dt, Norm norm, bool skip, int64_t hidden, bool ioWeights = false, bool small = false);

// Blocks of the variant's kernel that fit on the current GPU at once (an occupancy query: call it
// when configured, not per launch); 0 for variants that run one block per row group.
int32_t skipNormMaxBlocks(DType dt, Norm norm, bool skip, int32_t variant, int64_t hidden);

// The variant that runs the kernel built ahead of time in Triton (plugin_src/cubins, triton_aot.py)
// where the build has one for the shape, the device and the launch's form (LayerNorm with beta,
// RMSNorm without; a skip like x, with the sum output or (LayerNorm) without; no bias; 16-byte aligned);
// else the pick.
// skipNormVariant picks it where ops/skip_norm/triton_picks.json says it measured faster.
constexpr int32_t kSkipNormAotVariant = 256;

// Every variant that can run rows of `hidden` (for benchmarks and tests): writes up to `cap` of
// them to `out`, returns how many there are.
int skipNormCandidates(DType dt, Norm norm, bool skip, bool sum, int64_t hidden, int32_t* out, int cap);

// rows == 0 launches nothing. Returns the launch status (never aborts).
cudaError_t launchSkipNorm(DType dt, const SkipNormArgs& args, cudaStream_t stream);

} // namespace trtp
