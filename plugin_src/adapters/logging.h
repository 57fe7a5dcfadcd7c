// Logging through TensorRT's logger, and the guard every noexcept entry point runs its body in.
#pragma once
#include <NvInferRuntime.h>

#include "../common/errors.h"

namespace trtp {

// Logging goes to TensorRT's logger (found through the ILoggerFinder given by
// loadLibrary, or the runtime's getLogger for self-registering builds), else stderr.
void setLoggerFinder(nvinfer1::ILoggerFinder* finder) noexcept;
void setLogger(nvinfer1::ILogger* logger) noexcept;
void log(nvinfer1::ILogger::Severity severity, const char* fmt, ...) noexcept __attribute__((format(printf, 2, 3)));

// Runs fn; on any exception logs "<plugin>::<method>: <reason>" and returns onError.
template <class R, class F>
R guarded(const char* plugin, const char* method, R onError, F&& fn) noexcept {
    try {
        return fn();
    } catch (const std::exception& e) {
        log(nvinfer1::ILogger::Severity::kERROR, "%s::%s: %s", plugin, method, e.what());
    } catch (...) {
        log(nvinfer1::ILogger::Severity::kERROR, "%s::%s: unknown error", plugin, method);
    }
    return onError;
}

template <class F>
void guardedVoid(const char* plugin, const char* method, F&& fn) noexcept {
    guarded(plugin, method, 0, [&] {
        fn();
        return 0;
    });
}

} // namespace trtp
