// An op's declared schema (fields, inputs, outputs) and typed, checked parsing
// of the fields a creator receives: the type and length of every field are
// verified, unknown and duplicate fields are errors. FieldWriter builds the
// fields a V3 plugin serializes itself to. TensorRT-free: RawField has
// nvinfer1::PluginField's members, the adapters convert (adapters/trt_fields.h).
#pragma once
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

namespace trtp {

enum class FieldKind { kString, kFloat, kInt, kWeights };

// nvinfer1::PluginFieldType's values.
enum class FieldType : int32_t {
    kFloat16 = 0, kFloat32 = 1, kFloat64 = 2, kInt8 = 3, kInt16 = 4, kInt32 = 5, kChar = 6, kDims = 7,
    kUnknown = 8, kBFloat16 = 9, kInt64 = 10,
};
size_t fieldTypeBytes(FieldType t) noexcept; // bytes per value (1 for kChar and unknown types)
FieldType declaredType(FieldKind k);          // the type a field of this kind is declared with

// One field as a creator receives it (nvinfer1::PluginField's members).
struct RawField {
    const char* name = nullptr;
    const void* data = nullptr;
    FieldType type = FieldType::kUnknown;
    int32_t length = 0;
};

// One value of a string field that names an enum (value: the kernel's id).
struct EnumValue {
    const char* name;
    int32_t value;
};

struct FieldSpec {
    const char* name;
    FieldKind kind;
    bool required = false;
    std::optional<double> defaultValue = std::nullopt; // float/int fields
    std::vector<EnumValue> choices = {}; // kString fields naming an enum
    const char* doc = "";
    const char* defaultName = nullptr;   // enum fields: the default value's name
    std::optional<double> minValue = std::nullopt, maxValue = std::nullopt; // int fields: the range
};

struct TensorSpec {
    const char* name;
    bool optional = false;
    const char* whenField = nullptr; // outputs: present when this int field is 1
    const char* doc = "";
};

// The declaration every layer derives from: V2/V3 creators' field lists,
// the Python schema (trtplugins/schema.json, generated), the checks.
struct OpSchema {
    const char* name;
    const char* doc;
    std::vector<FieldSpec> fields;
    std::vector<TensorSpec> inputs, outputs;

    int32_t minInputs() const noexcept;
    int32_t maxInputs() const noexcept { return static_cast<int32_t>(inputs.size()); }
};

// JSON of the schemas (for trtplugins/schema.json), with the V2/V3 versions and namespace.
std::string schemaJson(const std::vector<const OpSchema*>& ops, const char* v2Version, const char* v3Version);

class FieldParser {
public:
    // Throws PluginError on malformed fields, unknown or duplicate names.
    FieldParser(const RawField* fields, int32_t n, const std::vector<FieldSpec>& schema);
    FieldParser(const std::vector<RawField>& fields, const OpSchema& op)
        : FieldParser(fields.data(), static_cast<int32_t>(fields.size()), op.fields) {}

    std::optional<std::string> string(const char* name) const;
    std::optional<float> float32(const char* name) const;
    std::optional<int32_t> int32(const char* name) const;
    // Accepts kFLOAT32, kFLOAT16 and kBF16 data; returns FP32 values.
    std::optional<std::vector<float>> weights(const char* name) const;

    template <class T>
    static T required(std::optional<T> v, const char* name);

private:
    const RawField* find(const char* name, FieldKind kind) const;
    template <class T>
    std::optional<T> single(const char* name, FieldKind kind) const;
    std::vector<const RawField*> mFields;
};

// Fields written as data the writer owns (V3 getFieldsToSerialize, the V2 blob): they stay valid
// until the next clear() or the writer's end.
class FieldWriter {
public:
    void clear();
    void string(const char* name, const std::string& v);
    void float32(const char* name, float v);
    void int32(const char* name, int32_t v);
    void weights(const char* name, const std::vector<float>& v); // nothing for an empty array
    const std::vector<RawField>& fields() const noexcept { return mFields; }

private:
    void add(const char* name, FieldType type, const void* data, size_t bytes, int32_t length);
    std::deque<std::vector<uint8_t>> mData;
    std::vector<RawField> mFields;
};

// Parses a string field against a table of names; unknown names are errors
// that list the valid ones.
template <class E>
struct EnumName {
    const char* name;
    E value;
};

std::string joinNames(const char* const* names, size_t n);

// Throws "<name> must be ..." unless lo <= v <= hi (either bound optional).
void checkRange(const char* name, int32_t v, std::optional<int32_t> lo, std::optional<int32_t> hi);

template <class E, size_t N>
E parseEnum(const std::string& s, const EnumName<E> (&table)[N], const char* field);

// The table as schema choices.
template <class E, size_t N>
std::vector<EnumValue> enumValues(const EnumName<E> (&table)[N]) {
    std::vector<EnumValue> out;
    for (const auto& e : table) out.push_back({e.name, static_cast<int32_t>(e.value)});
    return out;
}

// The name of an enum value ("?" if not in the table).
template <class E, size_t N>
const char* enumName(E v, const EnumName<E> (&table)[N]) {
    for (const auto& e : table)
        if (e.value == v) return e.name;
    return "?";
}

// For values read back from blobs: is v one of the table's values?
template <class E, size_t N>
bool isKnown(E v, const EnumName<E> (&table)[N]) {
    for (const auto& e : table)
        if (e.value == v) return true;
    return false;
}

} // namespace trtp

#include "fields_inl.h"
