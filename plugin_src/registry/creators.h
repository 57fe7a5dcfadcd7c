// The one explicit list of creators, and the runtime checks both loading
// mechanisms share.
#pragma once
#include <NvInferRuntime.h>

namespace trtp {

// Every creator of the library (static instances).
nvinfer1::IPluginCreator* const* creators(int32_t& count) noexcept;

// The TensorRT runtime library already loaded in this process (full, lean or
// dispatch; any major), or nullptr. `name` receives its soname.
void* loadedRuntime(const char** name, int32_t* major) noexcept;

// True when the loaded TensorRT major matches the headers this library was
// built with; otherwise logs why not. No runtime found -> true (cannot tell).
bool runtimeMatches() noexcept;

} // namespace trtp
