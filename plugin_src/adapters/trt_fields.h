// TensorRT's field collections and the ops' fields (common/fields.h: RawField has PluginField's
// members), both ways; the collection getFieldNames() returns.
#pragma once
#include <NvInferRuntime.h>

#include <vector>

#include "../common/fields.h"

namespace trtp {

// A creator's fields; throws on a null or malformed collection.
std::vector<RawField> rawFields(const nvinfer1::PluginFieldCollection* fc);

// The collection of fields the caller keeps (a V3 plugin's getFieldsToSerialize), valid until the
// next call or the end of this object.
class TrtFields {
public:
    const nvinfer1::PluginFieldCollection* of(const std::vector<RawField>& fields);

private:
    std::vector<nvinfer1::PluginField> mFields;
    nvinfer1::PluginFieldCollection mCollection{};
};

// The collection getFieldNames() returns, built once from a schema.
class FieldNames {
public:
    explicit FieldNames(const std::vector<FieldSpec>& schema);
    explicit FieldNames(const OpSchema& op) : FieldNames(op.fields) {}
    // A copy points into its own fields, never into the source's.
    FieldNames(const FieldNames& o) : mFields(o.mFields) { point(); }
    FieldNames& operator=(const FieldNames& o) {
        mFields = o.mFields;
        point();
        return *this;
    }
    const nvinfer1::PluginFieldCollection* collection() const noexcept { return &mCollection; }

private:
    void point() noexcept {
        mCollection.nbFields = static_cast<int32_t>(mFields.size());
        mCollection.fields = mFields.data();
    }
    std::vector<nvinfer1::PluginField> mFields;
    nvinfer1::PluginFieldCollection mCollection{};
};

} // namespace trtp
