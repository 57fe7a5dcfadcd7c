#include "trt_fields.h"

#include "../common/errors.h"

namespace trtp {

// The same members, the same type values: a field converts member by member.
static_assert(static_cast<int32_t>(nvinfer1::PluginFieldType::kFLOAT16) == static_cast<int32_t>(FieldType::kFloat16) &&
                  static_cast<int32_t>(nvinfer1::PluginFieldType::kFLOAT32) == static_cast<int32_t>(FieldType::kFloat32) &&
                  static_cast<int32_t>(nvinfer1::PluginFieldType::kINT32) == static_cast<int32_t>(FieldType::kInt32) &&
                  static_cast<int32_t>(nvinfer1::PluginFieldType::kCHAR) == static_cast<int32_t>(FieldType::kChar) &&
                  static_cast<int32_t>(nvinfer1::PluginFieldType::kBF16) == static_cast<int32_t>(FieldType::kBFloat16) &&
                  static_cast<int32_t>(nvinfer1::PluginFieldType::kINT64) == static_cast<int32_t>(FieldType::kInt64),
              "nvinfer1::PluginFieldType and trtp::FieldType differ");

std::vector<RawField> rawFields(const nvinfer1::PluginFieldCollection* fc) {
    if (!fc) fail("null PluginFieldCollection");
    if (fc->nbFields < 0 || (fc->nbFields > 0 && !fc->fields)) fail("malformed PluginFieldCollection");
    std::vector<RawField> out;
    for (int32_t i = 0; i < fc->nbFields; ++i) {
        const auto& f = fc->fields[i];
        out.push_back({f.name, f.data, static_cast<FieldType>(f.type), f.length});
    }
    return out;
}

const nvinfer1::PluginFieldCollection* TrtFields::of(const std::vector<RawField>& fields) {
    mFields.clear();
    for (const auto& f : fields)
        mFields.emplace_back(f.name, f.data, static_cast<nvinfer1::PluginFieldType>(f.type), f.length);
    mCollection.nbFields = static_cast<int32_t>(mFields.size());
    mCollection.fields = mFields.data();
    return &mCollection;
}

FieldNames::FieldNames(const std::vector<FieldSpec>& schema) {
    for (const auto& f : schema)
        mFields.emplace_back(f.name, nullptr, static_cast<nvinfer1::PluginFieldType>(declaredType(f.kind)),
                             f.kind == FieldKind::kString || f.kind == FieldKind::kWeights ? 0 : 1);
    point();
}

} // namespace trtp
