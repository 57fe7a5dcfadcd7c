#pragma once
#include "errors.h"

namespace trtp {

template <class T>
T FieldParser::required(std::optional<T> v, const char* name) {
    if (!v) fail("required field '%s' is missing", name);
    return *std::move(v);
}

template <class E, size_t N>
E parseEnum(const std::string& s, const EnumName<E> (&table)[N], const char* field) {
    const char* names[N];
    for (size_t i = 0; i < N; ++i) {
        if (s == table[i].name) return table[i].value;
        names[i] = table[i].name;
    }
    fail("field '%s' = '%s' is not one of: %s", field, s.c_str(), joinNames(names, N).c_str());
}

} // namespace trtp
