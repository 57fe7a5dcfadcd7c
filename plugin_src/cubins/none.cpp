// A build without ahead-of-time kernels (TRTPLUGINS_TRITON_AOT off): an empty table.
#include "cubins.h"

namespace trtp {
const Cubin kCubins[1] = {};
const int32_t kCubinCount = 0;
} // namespace trtp
