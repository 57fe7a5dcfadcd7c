// SkipNorm's BF16 row kernels (rows.cuh).
#include "rows.cuh"

namespace trtp {
TRTP_SKIP_NORM_ROWS(__nv_bfloat16)
} // namespace trtp
