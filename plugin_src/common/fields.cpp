#include "fields.h"

#include <cmath>
#include <cstring>

#include "errors.h"

namespace trtp {
namespace {
using nvinfer1::PluginFieldType;

const char* kindName(FieldKind k) {
    switch (k) {
    case FieldKind::kString: return "string (kCHAR)";
    case FieldKind::kFloat: return "float32 (kFLOAT32, 1 value)";
    case FieldKind::kInt: return "int32 (kINT32, 1 value)";
    case FieldKind::kWeights: return "weights (kFLOAT32, kFLOAT16 or kBF16)";
    }
    return "?";
}

const char* typeName(PluginFieldType t) {
    switch (t) {
    case PluginFieldType::kFLOAT16: return "kFLOAT16";
    case PluginFieldType::kFLOAT32: return "kFLOAT32";
    case PluginFieldType::kFLOAT64: return "kFLOAT64";
    case PluginFieldType::kINT8: return "kINT8";
    case PluginFieldType::kINT16: return "kINT16";
    case PluginFieldType::kINT32: return "kINT32";
    case PluginFieldType::kCHAR: return "kCHAR";
    case PluginFieldType::kDIMS: return "kDIMS";
    case PluginFieldType::kBF16: return "kBF16";
    case PluginFieldType::kINT64: return "kINT64";
    default: return "another type";
    }
}

PluginFieldType declaredType(FieldKind k) {
    switch (k) {
    case FieldKind::kString: return PluginFieldType::kCHAR;
    case FieldKind::kInt: return PluginFieldType::kINT32;
    default: return PluginFieldType::kFLOAT32;
    }
}

float halfToFloat(uint16_t h) {
    const uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v;
    if (exp == 0) v = std::ldexp(static_cast<float>(mant), -24);
    else if (exp == 31) v = mant ? NAN : INFINITY;
    else v = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
    return sign ? -v : v;
}

float bf16ToFloat(uint16_t b) {
    uint32_t bits = static_cast<uint32_t>(b) << 16;
    float v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
}
} // namespace

std::string joinNames(const char* const* names, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) out += (i ? ", " : "") + std::string(names[i]);
    return out;
}

FieldNames::FieldNames(const std::vector<FieldSpec>& schema) {
    for (const auto& f : schema) mFields.emplace_back(f.name, nullptr, declaredType(f.kind), f.kind == FieldKind::kString || f.kind == FieldKind::kWeights ? 0 : 1);
    point();
}

FieldParser::FieldParser(const nvinfer1::PluginFieldCollection* fc, const std::vector<FieldSpec>& schema) {
    if (!fc) fail("null PluginFieldCollection");
    if (fc->nbFields < 0 || (fc->nbFields > 0 && !fc->fields)) fail("malformed PluginFieldCollection");
    std::vector<const char*> known;
    for (const auto& s : schema) known.push_back(s.name);
    for (int32_t i = 0; i < fc->nbFields; ++i) {
        const auto& f = fc->fields[i];
        if (!f.name) fail("field %d has no name", i);
        bool isKnown = false;
        for (const char* k : known) isKnown = isKnown || std::strcmp(k, f.name) == 0;
        if (!isKnown) fail("unknown field '%s' (fields: %s)", f.name, joinNames(known.data(), known.size()).c_str());
        for (const auto* seen : mFields)
            if (std::strcmp(seen->name, f.name) == 0) fail("field '%s' given twice", f.name);
        if (f.length < 0 || (f.length > 0 && !f.data)) fail("field '%s' has no data", f.name);
        mFields.push_back(&f);
    }
}

const nvinfer1::PluginField* FieldParser::find(const char* name, FieldKind kind) const {
    for (const auto* f : mFields) {
        if (std::strcmp(f->name, name) != 0) continue;
        bool typeOk = kind == FieldKind::kWeights
                          ? (f->type == PluginFieldType::kFLOAT32 || f->type == PluginFieldType::kFLOAT16 || f->type == PluginFieldType::kBF16)
                          : f->type == declaredType(kind);
        if (!typeOk) fail("field '%s' must be %s, got %s", name, kindName(kind), typeName(f->type));
        bool lengthOk = kind == FieldKind::kString || kind == FieldKind::kWeights ? f->length >= 1 : f->length == 1;
        if (!lengthOk) fail("field '%s' must be %s, got %d values", name, kindName(kind), f->length);
        return f;
    }
    return nullptr;
}

std::optional<std::string> FieldParser::string(const char* name) const {
    const auto* f = find(name, FieldKind::kString);
    if (!f) return std::nullopt;
    const char* s = static_cast<const char*>(f->data);
    return std::string(s, strnlen(s, static_cast<size_t>(f->length)));
}

template <class T>
std::optional<T> FieldParser::single(const char* name, FieldKind kind) const {
    const auto* f = find(name, kind); // type and length (1) checked
    if (!f) return std::nullopt;
    T v;
    std::memcpy(&v, f->data, sizeof v);
    return v;
}

std::optional<float> FieldParser::float32(const char* name) const { return single<float>(name, FieldKind::kFloat); }
std::optional<int32_t> FieldParser::int32(const char* name) const { return single<int32_t>(name, FieldKind::kInt); }

std::optional<std::vector<float>> FieldParser::weights(const char* name) const {
    const auto* f = find(name, FieldKind::kWeights);
    if (!f) return std::nullopt;
    std::vector<float> out(static_cast<size_t>(f->length));
    const auto* bytes = static_cast<const uint8_t*>(f->data);
    for (size_t i = 0; i < out.size(); ++i) {
        if (f->type == PluginFieldType::kFLOAT32) {
            std::memcpy(&out[i], bytes + 4 * i, 4);
        } else {
            uint16_t h;
            std::memcpy(&h, bytes + 2 * i, 2);
            out[i] = f->type == PluginFieldType::kFLOAT16 ? halfToFloat(h) : bf16ToFloat(h);
        }
        if (!std::isfinite(out[i])) fail("field '%s'[%zu] is not finite", name, i);
    }
    return out;
}

} // namespace trtp
