// Self-registration on dlopen (ctypes.CDLL, Polygraphy --plugins, trtexec
// --staticPlugins, C++ services). getPluginRegistry is looked up in the
// TensorRT runtime already in the process (full, lean or dispatch), so one
// build serves all three without linking any of them.
#include <dlfcn.h>

#include <cstdio>

#include "../adapters/logging.h"
#include "creators.h"

namespace {

using RegistryFn = nvinfer1::IPluginRegistry* (*)();
using LoggerFn = nvinfer1::ILogger* (*)();

__attribute__((constructor)) void registerAll() {
    const char* name = nullptr;
    int32_t major = 0;
    void* runtime = trtp::loadedRuntime(&name, &major);
    if (!runtime) {
        static char own[32];
        std::snprintf(own, sizeof own, "libnvinfer.so.%d", NV_TENSORRT_MAJOR);
        runtime = dlopen(own, RTLD_NOW | RTLD_GLOBAL);
        name = own;
    }
    if (!runtime) {
        std::fprintf(stderr,
                     "[trtplugins] no TensorRT %d runtime (libnvinfer, libnvinfer_lean or libnvinfer_dispatch .so.%d) is "
                     "loaded or loadable: no plugin registered. Import tensorrt before loading this library.\n",
                     NV_TENSORRT_MAJOR, NV_TENSORRT_MAJOR);
        return;
    }
    // Major first: ILogger's vtable differs between majors (IVersionedInterface
    // in 11), so another major's logger must never be stored or called.
    if (!trtp::runtimeMatches()) return;
    if (auto logger = reinterpret_cast<LoggerFn>(dlsym(runtime, "getLogger"))) trtp::setLogger(logger());
    auto registryFn = reinterpret_cast<RegistryFn>(dlsym(runtime, "getPluginRegistry"));
    nvinfer1::IPluginRegistry* registry = registryFn ? registryFn() : nullptr;
    if (!registry) {
        trtp::log(nvinfer1::ILogger::Severity::kERROR, "%s has no plugin registry: no plugin registered", name);
        return;
    }
    int32_t n = 0;
    auto* const* all = trtp::creators(n);
    for (int32_t i = 0; i < n; ++i) {
        if (!registry->registerCreator(*all[i], ""))
            trtp::log(nvinfer1::ILogger::Severity::kWARNING, "creator %s v%s was not registered (already registered?)",
                      trtp::creatorName(all[i]), trtp::creatorVersion(all[i]));
    }
}

} // namespace
