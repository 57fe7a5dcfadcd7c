#include "creators.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <tuple>

#include "../adapters/v2.h"
#include "../adapters/v3.h"
#include "../ops/all_ops.h"

namespace trtp {
namespace {

// Both interfaces of every op of the list (ops/all_ops.h), V2 first (engines built with version 1 keep loading).
template <class... Ops>
struct Creators {
    static nvinfer1::IPluginCreatorInterface* const* list(int32_t& count) noexcept {
        static std::tuple<V2Creator<Ops>...> v2;
        static std::tuple<V3Creator<Ops>...> v3;
        static nvinfer1::IPluginCreatorInterface* const all[] = {&std::get<V2Creator<Ops>>(v2)..., &std::get<V3Creator<Ops>>(v3)...};
        count = static_cast<int32_t>(sizeof(all) / sizeof(all[0]));
        return all;
    }
};

} // namespace

nvinfer1::IPluginCreatorInterface* const* creators(int32_t& count) noexcept { return AllOps::Apply<Creators>::list(count); }

namespace {
template <class C>
C* as(nvinfer1::IPluginCreatorInterface* c, const char* kind) noexcept {
    return c && std::strcmp(c->getInterfaceInfo().kind, kind) == 0 ? static_cast<C*>(c) : nullptr;
}
nvinfer1::IPluginCreator* asV1(nvinfer1::IPluginCreatorInterface* c) noexcept { return as<nvinfer1::IPluginCreator>(c, "PLUGIN CREATOR_V1"); }
nvinfer1::IPluginCreatorV3One* asV3(nvinfer1::IPluginCreatorInterface* c) noexcept {
    return as<nvinfer1::IPluginCreatorV3One>(c, "PLUGIN CREATOR_V3ONE");
}

template <class C>
C* find(const char* name, C* (*cast)(nvinfer1::IPluginCreatorInterface*) noexcept) noexcept {
    int32_t n = 0;
    auto* const* all = creators(n);
    for (int32_t i = 0; i < n; ++i)
        if (C* c = cast(all[i]); c && name && std::strcmp(c->getPluginName(), name) == 0) return c;
    return nullptr;
}
} // namespace

nvinfer1::IPluginCreator* findV2Creator(const char* name) noexcept { return find(name, asV1); }
nvinfer1::IPluginCreatorV3One* findV3Creator(const char* name) noexcept { return find(name, asV3); }

const char* creatorName(nvinfer1::IPluginCreatorInterface* c) noexcept {
    if (auto* v1 = asV1(c)) return v1->getPluginName();
    if (auto* v3 = asV3(c)) return v3->getPluginName();
    return "?";
}

const char* creatorVersion(nvinfer1::IPluginCreatorInterface* c) noexcept {
    if (auto* v1 = asV1(c)) return v1->getPluginVersion();
    if (auto* v3 = asV3(c)) return v3->getPluginVersion();
    return "?";
}

void* loadedRuntime(const char** name, int32_t* major) noexcept {
    static const char* const flavours[] = {"libnvinfer.so", "libnvinfer_lean.so", "libnvinfer_dispatch.so"};
    // Own major first, then the others, so a mismatch is reported by name.
    const int32_t majors[] = {NV_TENSORRT_MAJOR, 10, 11, 12};
    static char soname[64];
    for (int32_t m : majors) {
        for (const char* f : flavours) {
            std::snprintf(soname, sizeof soname, "%s.%d", f, m);
            if (void* h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD)) {
                if (name) *name = soname;
                if (major) *major = m;
                return h;
            }
        }
    }
    return nullptr;
}

namespace {
bool checkRuntime() noexcept {
    const char* name = nullptr;
    int32_t major = 0;
    void* h = loadedRuntime(&name, &major);
    if (!h) return true;
    using VersionFn = int32_t (*)();
    if (auto fn = reinterpret_cast<VersionFn>(dlsym(h, "getInferLibVersion"))) major = fn() / 10000 >= 1 ? fn() / 10000 : major;
    // getInferLibVersion is major*10000 + minor*100 + patch.
    if (major == NV_TENSORRT_MAJOR) return true;
    log(nvinfer1::ILogger::Severity::kERROR,
        "this library was built for TensorRT %d but %s (TensorRT %d) is loaded: the plugin ABI differs between "
        "majors, so no plugin is registered. Load libtrtplugins_trt%d instead.",
        NV_TENSORRT_MAJOR, name, major, major);
    return false;
}
} // namespace

bool runtimeMatches() noexcept {
    static const bool matches = checkRuntime(); // checked (and reported) once per process
    return matches;
}

} // namespace trtp
