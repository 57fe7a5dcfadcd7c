#include "logging.h"

#include <atomic>
#include <cstdio>

namespace trtp {
namespace {
std::atomic<nvinfer1::ILoggerFinder*> gFinder{nullptr};
std::atomic<nvinfer1::ILogger*> gLogger{nullptr};
} // namespace

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
