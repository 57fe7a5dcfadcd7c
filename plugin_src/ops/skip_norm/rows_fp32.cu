// SkipNorm's FP32 row kernels (rows.cuh).
#include "rows.cuh"

namespace trtp {
TRTP_SKIP_NORM_ROWS(float)
} // namespace trtp
