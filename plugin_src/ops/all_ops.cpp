#include "all_ops.h"

namespace trtp {

std::string schemaJson() { return schemaJson(AllOps::schemas(), kV2Version, kV3Version); }

} // namespace trtp
