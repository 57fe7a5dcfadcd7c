// Entry points of IPluginRegistry::loadLibrary (Python registry.load_library,
// trtexec --dynamicPlugins). This build never registers itself on dlopen.
#include "creators.h"

#include "../common/errors.h"

#define TRTP_EXPORT extern "C" __attribute__((visibility("default")))

// Another major's ILoggerFinder has another vtable: only a matching one is kept.
TRTP_EXPORT void setLoggerFinder(nvinfer1::ILoggerFinder* finder) {
    if (trtp::runtimeMatches()) trtp::setLoggerFinder(finder);
}

TRTP_EXPORT nvinfer1::IPluginCreatorInterface* const* getCreators(int32_t& nbCreators) {
    nbCreators = 0;
    if (!trtp::runtimeMatches()) return nullptr;
    // IPluginCreator derives from IPluginCreatorInterface alone: the pointer
    // arrays are layout-compatible only through explicit conversion.
    static nvinfer1::IPluginCreatorInterface* list[16];
    int32_t n = 0;
    auto* const* all = trtp::creators(n);
    for (int32_t i = 0; i < n && i < 16; ++i) list[i] = all[i];
    nbCreators = n;
    return list;
}
