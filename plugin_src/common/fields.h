// Typed, checked parsing of PluginFieldCollection: the type and length of
// every field are verified, unknown and duplicate fields are errors.
#pragma once
#include <NvInferRuntime.h>

#include <optional>
#include <string>
#include <vector>

namespace trtp {

enum class FieldKind { kString, kFloat, kInt, kWeights };

struct FieldSpec {
    const char* name;
    FieldKind kind;
};

// The collection getFieldNames() returns, built once from a schema.
class FieldNames {
public:
    explicit FieldNames(const std::vector<FieldSpec>& schema);
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

class FieldParser {
public:
    // Throws PluginError on a null collection, unknown or duplicate names.
    FieldParser(const nvinfer1::PluginFieldCollection* fc, const std::vector<FieldSpec>& schema);

    std::optional<std::string> string(const char* name) const;
    std::optional<float> float32(const char* name) const;
    std::optional<int32_t> int32(const char* name) const;
    // Accepts kFLOAT32, kFLOAT16 and kBF16 data; returns FP32 values.
    std::optional<std::vector<float>> weights(const char* name) const;

    template <class T>
    static T required(std::optional<T> v, const char* name);

private:
    const nvinfer1::PluginField* find(const char* name, FieldKind kind) const;
    template <class T>
    std::optional<T> single(const char* name, FieldKind kind) const;
    std::vector<const nvinfer1::PluginField*> mFields;
};

// Parses a string field against a table of names; unknown names are errors
// that list the valid ones.
template <class E>
struct EnumName {
    const char* name;
    E value;
};

std::string joinNames(const char* const* names, size_t n);

template <class E, size_t N>
E parseEnum(const std::string& s, const EnumName<E> (&table)[N], const char* field);

// For values read back from blobs: is v one of the table's values?
template <class E, size_t N>
bool isKnown(E v, const EnumName<E> (&table)[N]) {
    for (const auto& e : table)
        if (e.value == v) return true;
    return false;
}

} // namespace trtp

#include "fields_inl.h"
