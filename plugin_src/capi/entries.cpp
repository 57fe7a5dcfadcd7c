// What Python needs to call the entry points without restating them (trtplugins/kernels.py):
// each one's signature, derived from its C type, and the enums they take that no op field names.
#include <string>
#include <utility>

#include "../common/fields.h"
#include "../ops/group_norm/group_norm.h"
#include "../ops/skip_norm/skip_norm.h"
#include "kernels.h"
#include "run.h"

namespace {
// One letter per C type: what ctypes needs to call a function (trtplugins/kernels.py reads them).
template <class T> struct Code;
#define TRTP_CODE(type, letter) template <> struct Code<type> { static constexpr char v = letter; };
TRTP_CODE(void, 'v')
TRTP_CODE(int, 'i')
TRTP_CODE(long long, 'q')
TRTP_CODE(float, 'f')
TRTP_CODE(size_t, 'z')
TRTP_CODE(void*, 'p')
TRTP_CODE(const void*, 'p')
TRTP_CODE(const float*, 'p')
TRTP_CODE(const char*, 's')
TRTP_CODE(int*, 'I')
TRTP_CODE(const int*, 'I')
TRTP_CODE(long long*, 'Q')
TRTP_CODE(const long long*, 'Q')
TRTP_CODE(const char* const*, 'S')
TRTP_CODE(const void* const*, 'P')
TRTP_CODE(void* const*, 'P')
#undef TRTP_CODE

// "name result:arguments", e.g. "trtp_group_norm_workspace z:qq".
template <class R, class... A>
std::string entry(const char* name, R (*)(A...)) {
    return std::string(name) + " " + Code<R>::v + ":" + std::string{Code<A>::v...};
}
#define TRTP_ENTRY(fn) entry(#fn, &fn)

template <class E, size_t N>
std::string enumJson(const char* name, const std::pair<const char*, E> (&table)[N]) {
    std::string out = std::string("\"") + name + "\": {";
    for (size_t i = 0; i < N; ++i) out += (i ? ", \"" : "\"") + std::string(table[i].first) + "\": " + std::to_string(int(table[i].second));
    return out + "}";
}
} // namespace

// Every entry point (kernels.h, run.h), one per line: "name result:arguments" (letters: see Code).
TRTP_API const char* trtp_entries() {
    static const std::string s = [] {
        std::string out;
        for (const std::string& e :
             {TRTP_ENTRY(trtp_bias_activation), TRTP_ENTRY(trtp_gated_activation), TRTP_ENTRY(trtp_skip_norm),
              TRTP_ENTRY(trtp_skip_norm_variant), TRTP_ENTRY(trtp_skip_norm_small_elems),
              TRTP_ENTRY(trtp_skip_norm_skip_rows),
              TRTP_ENTRY(trtp_skip_norm_candidates), TRTP_ENTRY(trtp_group_norm), TRTP_ENTRY(trtp_group_norm_plan),
              TRTP_ENTRY(trtp_group_norm_configure), TRTP_ENTRY(trtp_group_norm_device),
              TRTP_ENTRY(trtp_group_norm_workspace), TRTP_ENTRY(trtp_group_norm_resident),
              TRTP_ENTRY(trtp_group_norm_resident_plan), TRTP_ENTRY(trtp_group_norm_in_registers),
              TRTP_ENTRY(trtp_group_norm_resident_first),
              TRTP_ENTRY(trtp_group_norm_choose), TRTP_ENTRY(trtp_group_norm_chosen),
              TRTP_ENTRY(trtp_group_norm_channels_last_ok), TRTP_ENTRY(trtp_group_norm_floor),
              TRTP_ENTRY(trtp_error_string), TRTP_ENTRY(trtp_empty_launch),
              TRTP_ENTRY(trtp_op_create), TRTP_ENTRY(trtp_op_destroy), TRTP_ENTRY(trtp_op_nb_outputs),
              TRTP_ENTRY(trtp_op_output_dims), TRTP_ENTRY(trtp_op_configure), TRTP_ENTRY(trtp_op_workspace),
              TRTP_ENTRY(trtp_op_initialize),
              TRTP_ENTRY(trtp_op_enqueue), TRTP_ENTRY(trtp_run), TRTP_ENTRY(trtp_last_error), TRTP_ENTRY(trtp_schema)})
            out += e + "\n";
        return out;
    }();
    return s.c_str();
}

// The enums the entry points take that no op field names (JSON): I/O types, field types (by
// PluginFieldType's names), GroupNorm's skip modes.
TRTP_API const char* trtp_enums() {
    static constexpr std::pair<const char*, trtp::DType> kDTypes[] = {
        {"float32", trtp::DType::kFloat32}, {"float16", trtp::DType::kFloat16}, {"bfloat16", trtp::DType::kBFloat16}};
    static constexpr std::pair<const char*, trtp::GroupNormSkip> kSkips[] = {
        {"none", trtp::GroupNormSkip::kNone}, {"full", trtp::GroupNormSkip::kFull}, {"per_channel", trtp::GroupNormSkip::kPerChannel}};
    static constexpr std::pair<const char*, trtp::FieldType> kFieldTypes[] = {
        {"FLOAT16", trtp::FieldType::kFloat16}, {"FLOAT32", trtp::FieldType::kFloat32}, {"INT32", trtp::FieldType::kInt32},
        {"CHAR", trtp::FieldType::kChar}, {"BF16", trtp::FieldType::kBFloat16}};
    static constexpr std::pair<const char*, int32_t> kSkipNormVariants[] = {{"aot", trtp::kSkipNormAotVariant}};
    static const std::string s = "{" + enumJson("dtype", kDTypes) + ", " + enumJson("field_type", kFieldTypes) + ", " +
                                 enumJson("group_norm_skip", kSkips) + ", " +
                                 enumJson("skip_norm_variant", kSkipNormVariants) + "}";
    return s.c_str();
}
