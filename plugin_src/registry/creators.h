// The one explicit list of creators, and the runtime checks both loading
// mechanisms share.
#pragma once
#include <NvInferRuntime.h>

#include <string>

#include "../ops/all_ops.h"

namespace trtp {

// Every creator of the library (static instances), in the form both getCreators
// and IPluginRegistry::registerCreator take.
nvinfer1::IPluginCreatorInterface* const* creators(int32_t& count) noexcept;

// The V2 (IPluginCreator) creator of a plugin name, or nullptr.
nvinfer1::IPluginCreator* findV2Creator(const char* name) noexcept;

// The V3 (IPluginCreatorV3One) creator of a plugin name, or nullptr.
nvinfer1::IPluginCreatorV3One* findV3Creator(const char* name) noexcept;

// A creator's name and version, whatever its interface kind ("?" if unknown).
const char* creatorName(nvinfer1::IPluginCreatorInterface* c) noexcept;
const char* creatorVersion(nvinfer1::IPluginCreatorInterface* c) noexcept;

// The TensorRT runtime library already loaded in this process (full, lean or
// dispatch; any major), or nullptr. `name` receives its soname.
void* loadedRuntime(const char** name, int32_t* major) noexcept;

// True when the loaded TensorRT major matches the headers this library was
// built with; otherwise logs why not. No runtime found -> true (cannot tell).
bool runtimeMatches() noexcept;

} // namespace trtp
