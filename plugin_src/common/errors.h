// Errors are values at the TensorRT boundary: C++ exceptions stay inside the
// library, every noexcept entry point catches them (adapters/logging.h: guarded)
// and logs, or returns an error value (the C entry points).
#pragma once
#include <cstdarg>
#include <stdexcept>
#include <string>

namespace trtp {

struct PluginError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// printf-style message -> PluginError.
[[noreturn]] void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

inline void check(bool ok, const char* what) {
    if (!ok) throw PluginError(what);
}

// printf-style formatting of a va_list.
std::string vformat(const char* fmt, va_list args);

} // namespace trtp
