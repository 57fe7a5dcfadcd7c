#include "errors.h"

#include <atomic>
#include <cstdio>
#include <vector>

namespace trtp {
namespace {
std::atomic<nvinfer1::ILoggerFinder*> gFinder{nullptr};
std::atomic<nvinfer1::ILogger*> gLogger{nullptr};

std::string vformat(const char* fmt, va_list args) {
    va_list copy;
    va_copy(copy, args);
    int n = std::vsnprintf(nullptr, 0, fmt, copy);
    va_end(copy);
    if (n <= 0) return fmt;
    std::vector<char> buf(static_cast<size_t>(n) + 1);
    std::vsnprintf(buf.data(), buf.size(), fmt, args);
    return std::string(buf.data(), static_cast<size_t>(n));
}
} // namespace

void fail(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    std::string msg = vformat(fmt, args);
    va_end(args);
    throw PluginError(msg);
}

void setLoggerFinder(nvinfer1::ILoggerFinder* finder) noexcept { gFinder.store(finder); }
void setLogger(nvinfer1::ILogger* logger) noexcept { gLogger.store(logger); }

void log(nvinfer1::ILogger::Severity severity, const char* fmt, ...) noexcept {
    try {
        va_list args;
        va_start(args, fmt);
        std::string msg = "[trtplugins] " + vformat(fmt, args);
        va_end(args);
        nvinfer1::ILogger* logger = nullptr;
        if (auto* finder = gFinder.load()) logger = finder->findLogger();
        if (!logger) logger = gLogger.load();
        if (logger) {
            logger->log(severity, msg.c_str());
        } else if (severity <= nvinfer1::ILogger::Severity::kWARNING) {
            std::fprintf(stderr, "%s\n", msg.c_str());
        }
    } catch (...) {
        // Logging must never throw.
    }
}

} // namespace trtp
