#include "fields.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "errors.h"

namespace trtp {

FieldType declaredType(FieldKind k) {
    switch (k) {
    case FieldKind::kString: return FieldType::kChar;
    case FieldKind::kInt: return FieldType::kInt32;
    default: return FieldType::kFloat32;
    }
}

size_t fieldTypeBytes(FieldType t) noexcept {
    switch (t) {
    case FieldType::kFloat16: case FieldType::kBFloat16: case FieldType::kInt16: return 2;
    case FieldType::kFloat32: case FieldType::kInt32: return 4;
    case FieldType::kFloat64: case FieldType::kInt64: return 8;
    default: return 1;
    }
}

namespace {

const char* kindName(FieldKind k) {
    switch (k) {
    case FieldKind::kString: return "string (kCHAR)";
    case FieldKind::kFloat: return "float32 (kFLOAT32, 1 value)";
    case FieldKind::kInt: return "int32 (kINT32, 1 value)";
    case FieldKind::kWeights: return "weights (kFLOAT32, kFLOAT16 or kBF16)";
    }
    return "?";
}

const char* typeName(FieldType t) {
    switch (t) {
    case FieldType::kFloat16: return "kFLOAT16";
    case FieldType::kFloat32: return "kFLOAT32";
    case FieldType::kFloat64: return "kFLOAT64";
    case FieldType::kInt8: return "kINT8";
    case FieldType::kInt16: return "kINT16";
    case FieldType::kInt32: return "kINT32";
    case FieldType::kChar: return "kCHAR";
    case FieldType::kDims: return "kDIMS";
    case FieldType::kBFloat16: return "kBF16";
    case FieldType::kInt64: return "kINT64";
    default: return "another type";
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

void checkRange(const char* name, int32_t v, std::optional<int32_t> lo, std::optional<int32_t> hi) {
    if ((!lo || v >= *lo) && (!hi || v <= *hi)) return;
    if (lo && hi && *hi == *lo + 1) fail("%s must be %d or %d, got %d", name, *lo, *hi, v);
    if (lo && hi) fail("%s must be in %d..%d, got %d", name, *lo, *hi, v);
    if (lo) fail("%s must be >= %d, got %d", name, *lo, v);
    fail("%s must be <= %d, got %d", name, *hi, v);
}

std::string joinNames(const char* const* names, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) out += (i ? ", " : "") + std::string(names[i]);
    return out;
}

int32_t OpSchema::minInputs() const noexcept {
    int32_t n = 0;
    for (const auto& t : inputs) n += t.optional ? 0 : 1;
    return n;
}

namespace {
std::string quoted(const char* s) {
    std::string out = "\"";
    for (const char* c = s ? s : ""; *c; ++c) {
        if (*c == '"' || *c == '\\') out += '\\';
        out += *c;
    }
    return out + "\"";
}

const char* kindKey(FieldKind k) {
    switch (k) {
    case FieldKind::kString: return "string";
    case FieldKind::kFloat: return "float";
    case FieldKind::kInt: return "int";
    case FieldKind::kWeights: return "weights";
    }
    return "?";
}

std::string tensorsJson(const std::vector<TensorSpec>& ts) {
    std::string out = "[";
    for (size_t i = 0; i < ts.size(); ++i) {
        out += (i ? ", " : "") + std::string("{\"name\": ") + quoted(ts[i].name) + ", \"optional\": " + (ts[i].optional ? "true" : "false");
        if (ts[i].whenField) out += ", \"when\": " + quoted(ts[i].whenField);
        out += ", \"doc\": " + quoted(ts[i].doc) + "}";
    }
    return out + "]";
}
} // namespace

std::string schemaJson(const std::vector<const OpSchema*>& ops, const char* v2Version, const char* v3Version) {
    std::string out = "{\n  \"versions\": {\"v2\": " + quoted(v2Version) + ", \"v3\": " + quoted(v3Version) + "},\n  \"namespace\": \"\",\n  \"ops\": [";
    for (size_t i = 0; i < ops.size(); ++i) {
        const OpSchema& op = *ops[i];
        out += std::string(i ? "," : "") + "\n    {\"name\": " + quoted(op.name) + ", \"doc\": " + quoted(op.doc) + ",\n     \"fields\": [";
        for (size_t k = 0; k < op.fields.size(); ++k) {
            const FieldSpec& f = op.fields[k];
            out += std::string(k ? "," : "") + "\n       {\"name\": " + quoted(f.name) + ", \"kind\": \"" + kindKey(f.kind) +
                   "\", \"required\": " + (f.required ? "true" : "false");
            if (f.defaultValue) {
                char num[32];
                std::snprintf(num, sizeof num, f.kind == FieldKind::kInt ? "%.0f" : "%.7g", *f.defaultValue);
                out += std::string(", \"default\": ") + num;
            }
            if (f.defaultName) out += std::string(", \"default\": ") + quoted(f.defaultName);
            for (const auto& [key, v] : {std::pair{"min", f.minValue}, std::pair{"max", f.maxValue}})
                if (v) out += std::string(", \"") + key + "\": " + std::to_string(static_cast<long long>(*v));
            if (!f.choices.empty()) {
                out += ", \"choices\": {";
                for (size_t c = 0; c < f.choices.size(); ++c)
                    out += (c ? ", " : "") + quoted(f.choices[c].name) + ": " + std::to_string(f.choices[c].value);
                out += "}";
            }
            out += ", \"doc\": " + quoted(f.doc) + "}";
        }
        out += "],\n     \"inputs\": " + tensorsJson(op.inputs) + ",\n     \"outputs\": " + tensorsJson(op.outputs) + "}";
    }
    return out + "\n  ]\n}\n";
}

void FieldWriter::clear() {
    mData.clear();
    mFields.clear();
}

void FieldWriter::add(const char* name, FieldType type, const void* data, size_t bytes, int32_t length) {
    const auto* p = static_cast<const uint8_t*>(data);
    mData.emplace_back(p, p + bytes);
    mFields.push_back({name, mData.back().data(), type, length});
}

void FieldWriter::string(const char* name, const std::string& v) {
    add(name, FieldType::kChar, v.c_str(), v.size() + 1, static_cast<int32_t>(v.size() + 1));
}
void FieldWriter::float32(const char* name, float v) { add(name, FieldType::kFloat32, &v, sizeof v, 1); }
void FieldWriter::int32(const char* name, int32_t v) { add(name, FieldType::kInt32, &v, sizeof v, 1); }
void FieldWriter::weights(const char* name, const std::vector<float>& v) {
    if (!v.empty()) add(name, FieldType::kFloat32, v.data(), v.size() * sizeof(float), static_cast<int32_t>(v.size()));
}

FieldParser::FieldParser(const RawField* fields, int32_t n, const std::vector<FieldSpec>& schema) {
    if (n < 0 || (n > 0 && !fields)) fail("malformed PluginFieldCollection");
    std::vector<const char*> known;
    for (const auto& s : schema) known.push_back(s.name);
    for (int32_t i = 0; i < n; ++i) {
        const auto& f = fields[i];
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

const RawField* FieldParser::find(const char* name, FieldKind kind) const {
    for (const auto* f : mFields) {
        if (std::strcmp(f->name, name) != 0) continue;
        bool typeOk = kind == FieldKind::kWeights
                          ? (f->type == FieldType::kFloat32 || f->type == FieldType::kFloat16 || f->type == FieldType::kBFloat16)
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
        if (f->type == FieldType::kFloat32) {
            std::memcpy(&out[i], bytes + 4 * i, 4);
        } else {
            uint16_t h;
            std::memcpy(&h, bytes + 2 * i, 2);
            out[i] = f->type == FieldType::kFloat16 ? halfToFloat(h) : bf16ToFloat(h);
        }
        if (!std::isfinite(out[i])) fail("field '%s'[%zu] is not finite", name, i);
    }
    return out;
}

} // namespace trtp
