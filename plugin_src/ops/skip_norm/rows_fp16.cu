// SkipNorm's FP16 row kernels (rows.cuh).
#include "rows.cuh"

namespace trtp {
TRTP_SKIP_NORM_ROWS(__half)
} // namespace trtp
