// An op's field table: each creator field written once (name, kind, default, range, enum names and
// ids, doc) with the member of the op's parameters P it fills. Everything that handles fields derives
// from it: the schema (FieldSpec), creation (readFields), V3 serialization (writeFields), the V2 blob
// (the same fields, blob format 2) and the blobs of format 1 (readV1: the old layout, field by field).
#pragma once
#include <functional>
#include <optional>
#include <type_traits>
#include <vector>

#include "fields.h"
#include "serialize.h"

namespace trtp {

template <class P>
struct Field {
    FieldSpec spec;
    std::function<void(P&, const FieldParser&)> read;  // from a collection; its default when absent
    std::function<void(const P&, FieldWriter&)> write;
    std::function<void(P&, Reader&)> readV1;           // blob format 1: the value alone
};

template <class P>
using FieldTable = std::vector<Field<P>>;

// The table's entries, made from a member of P each.
template <class P>
struct Fields {
    static Field<P> real(const char* name, float P::*m, float def, const char* doc) {
        FieldSpec s{name, FieldKind::kFloat, false, def};
        s.doc = doc;
        return {s, [=](P& p, const FieldParser& f) { p.*m = f.float32(name).value_or(def); },
                [=](const P& p, FieldWriter& w) { w.float32(name, p.*m); },
                [=](P& p, Reader& r) { p.*m = r.pod<float>(); }};
    }

    // Required when def is empty; lo, hi: the range checked at creation (and in old blobs).
    static Field<P> integer(const char* name, int32_t P::*m, std::optional<int32_t> def, std::optional<int32_t> lo,
                            std::optional<int32_t> hi, const char* doc) {
        FieldSpec s{name, FieldKind::kInt, !def};
        if (def) s.defaultValue = *def;
        if (lo) s.minValue = *lo;
        if (hi) s.maxValue = *hi;
        s.doc = doc;
        auto set = [=](P& p, int32_t v) { checkRange(name, v, lo, hi), p.*m = v; };
        return {s,
                [=](P& p, const FieldParser& f) {
                    const auto v = f.int32(name);
                    set(p, v ? *v : FieldParser::required(def, name));
                },
                [=](const P& p, FieldWriter& w) { w.int32(name, p.*m); },
                [=](P& p, Reader& r) { set(p, r.pod<int32_t>()); }};
    }

    // Absent: empty (or an error when required).
    static Field<P> weights(const char* name, std::vector<float> P::*m, bool required, const char* doc) {
        FieldSpec s{name, FieldKind::kWeights, required};
        s.doc = doc;
        return {s,
                [=](P& p, const FieldParser& f) {
                    auto v = f.weights(name);
                    p.*m = required ? FieldParser::required(std::move(v), name) : v.value_or(std::vector<float>{});
                },
                [=](const P& p, FieldWriter& w) { w.weights(name, p.*m); },
                [=](P& p, Reader& r) { p.*m = r.floats(); }};
    }

    // A string naming one of the table's values (stored in blobs of format 1 as its id); required
    // when def is empty.
    template <class E, size_t N>
    static Field<P> choice(const char* name, E P::*m, const EnumName<E> (&table)[N], std::optional<std::common_type_t<E>> def,
                           const char* doc) {
        FieldSpec s{name, FieldKind::kString, !def, std::nullopt, enumValues(table)};
        if (def) s.defaultName = enumName(*def, table);
        s.doc = doc;
        return {s,
                [=, &table](P& p, const FieldParser& f) {
                    const auto v = f.string(name);
                    p.*m = v ? parseEnum(*v, table, name) : FieldParser::required(def, name);
                },
                [=, &table](const P& p, FieldWriter& w) { w.string(name, enumName(p.*m, table)); },
                [=, &table](P& p, Reader& r) {
                    const auto id = r.pod<int32_t>();
                    if (!isKnown(static_cast<E>(id), table)) fail("serialized %s id %d is invalid", name, id);
                    p.*m = static_cast<E>(id);
                }};
    }
};

// The entries of a and then of b.
template <class P>
FieldTable<P> operator+(FieldTable<P> a, const FieldTable<P>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

template <class P>
std::vector<FieldSpec> fieldSpecs(const FieldTable<P>& t) {
    std::vector<FieldSpec> out;
    for (const auto& f : t) out.push_back(f.spec);
    return out;
}

template <class P>
P readFields(const FieldTable<P>& t, const FieldParser& f) {
    P p{};
    for (const auto& field : t) field.read(p, f);
    return p;
}

template <class P>
void writeFields(const FieldTable<P>& t, const P& p, FieldWriter& w) {
    for (const auto& field : t) field.write(p, w);
}

// A blob of format 1: the fields named by `layout`, in its order, each its value alone.
template <class P, size_t N>
P readV1(const FieldTable<P>& t, const char* const (&layout)[N], Reader& r) {
    P p{};
    for (const char* name : layout) {
        const Field<P>* field = nullptr;
        for (const auto& f : t)
            if (std::string(f.spec.name) == name) field = &f;
        check(field != nullptr, "format-1 layout names an unknown field");
        field->readV1(p, r);
    }
    return p;
}

} // namespace trtp
