// Entry points of IPluginRegistry::loadLibrary (Python registry.load_library,
// trtexec --dynamicPlugins). This build never registers itself on dlopen.
#include "creators.h"

#include "../adapters/logging.h"

#define TRTP_EXPORT extern "C" __attribute__((visibility("default")))

// Another major's ILoggerFinder has another vtable: only a matching one is kept.
TRTP_EXPORT void setLoggerFinder(nvinfer1::ILoggerFinder* finder) {
    if (trtp::runtimeMatches()) trtp::setLoggerFinder(finder);
}

TRTP_EXPORT nvinfer1::IPluginCreatorInterface* const* getCreators(int32_t& nbCreators) {
    nbCreators = 0;
    if (!trtp::runtimeMatches()) return nullptr;
    return trtp::creators(nbCreators); // the list itself: its length is the count
}
