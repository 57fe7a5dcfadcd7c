// C ABI that drives the plugin methods directly, the way TensorRT calls them,
// with real tensor descriptors and a real IExprBuilder, but no TensorRT
// library: the GPU tests (tests/gpu/test_plugin_gpu.py) call it with ctypes.
// Dims travel as int64 blocks of 9: nbDims, d[0..7].
#include <NvInferRuntime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <deque>
#include <vector>

#include "../adapters/logging.h"
#include "../common/gpu_support.h"
#include "../registry/creators.h"

using namespace nvinfer1;

namespace {

constexpr int kDimsBlock = 9;

// Constant-only dimension expressions: shape-preserving plugins, and halved dims (FLOOR_DIV).
class Expr : public IDimensionExpr {
public:
    explicit Expr(int64_t v) : mVal(v) { mImpl = &mVal; }

private:
    struct Val : apiv::VDimensionExpr {
        explicit Val(int64_t v) : v(v) {}
        int64_t v;
        bool isConstant() const override { return true; }
        int64_t getConstantValue() const override { return v; }
        bool isSizeTensor() const override { return false; }
    } mVal;
};

class Builder : public IExprBuilder {
public:
    Builder() { mImpl = &mB; mB.owner = this; }
    const IDimensionExpr* make(int64_t v) {
        mExprs.emplace_back(v);
        return &mExprs.back();
    }

private:
    struct B : apiv::VExprBuilder {
        Builder* owner;
        const IDimensionExpr* constant(int64_t v) override { return owner->make(v); }
        const IDimensionExpr* operation(DimensionOperation op, const IDimensionExpr& a, const IDimensionExpr& b) override {
            const int64_t x = a.getConstantValue(), y = b.getConstantValue();
            switch (op) {
            case DimensionOperation::kSUM: return owner->make(x + y);
            case DimensionOperation::kPROD: return owner->make(x * y);
            case DimensionOperation::kMAX: return owner->make(x > y ? x : y);
            case DimensionOperation::kMIN: return owner->make(x < y ? x : y);
            case DimensionOperation::kSUB: return owner->make(x - y);
            case DimensionOperation::kFLOOR_DIV: return y ? owner->make(x / y - ((x % y) && ((x < 0) != (y < 0)))) : nullptr;
            default: return nullptr;
            }
        }
        const IDimensionExpr* declareSizeTensor(int32_t, const IDimensionExpr&, const IDimensionExpr&) override { return nullptr; }
    } mB;
    std::deque<Expr> mExprs;
};

Dims toDims(const int64_t* block) {
    Dims d{};
    d.nbDims = static_cast<int32_t>(block[0]);
    for (int i = 0; i < d.nbDims && i < Dims::MAX_DIMS; ++i) d.d[i] = block[1 + i];
    return d;
}

PluginTensorDesc toDesc(const int64_t* block, int32_t type, int32_t format) {
    PluginTensorDesc t{};
    t.dims = toDims(block);
    t.type = static_cast<DataType>(type);
    t.format = static_cast<TensorFormat>(format);
    t.scale = 1.f;
    return t;
}

// One plugin of either interface: the th_ functions call the V2 or the V3
// method TensorRT would call.
struct Handle {
    IPluginV2DynamicExt* v2 = nullptr;
    IPluginV3* v3 = nullptr;
    std::vector<int> formats; // of inputs then outputs in configure / enqueue (th_set_formats); none: linear
    int format(int i) const { return i < static_cast<int>(formats.size()) ? formats[static_cast<size_t>(i)] : 0; }
    IPluginV3OneBuild* build() const { return static_cast<IPluginV3OneBuild*>(v3->getCapabilityInterface(PluginCapabilityType::kBUILD)); }
    IPluginV3OneRuntime* runtime() const { return static_cast<IPluginV3OneRuntime*>(v3->getCapabilityInterface(PluginCapabilityType::kRUNTIME)); }
    const char* name() const {
        return v2 ? v2->getPluginType() : static_cast<IPluginV3OneCore*>(v3->getCapabilityInterface(PluginCapabilityType::kCORE))->getPluginName();
    }
};

Handle* H(void* p) { return static_cast<Handle*>(p); }
void* wrapV2(IPluginV2* p) { return p ? new Handle{static_cast<IPluginV2DynamicExt*>(p), nullptr} : nullptr; }
void* wrapV3(IPluginV3* p) { return p ? new Handle{nullptr, p} : nullptr; }

IPluginCreator* findCreator(const char* name) { return trtp::findV2Creator(name); }

// A V3 plugin's fields as bytes (the harness's stand-in for an engine):
// per field u32 name length, name, i32 type, i32 length, u32 byte count, data.
size_t fieldBytes(PluginFieldType t) {
    switch (t) {
    case PluginFieldType::kFLOAT32: case PluginFieldType::kINT32: return 4;
    case PluginFieldType::kFLOAT16: case PluginFieldType::kBF16: case PluginFieldType::kINT16: return 2;
    case PluginFieldType::kFLOAT64: case PluginFieldType::kINT64: return 8;
    default: return 1;
    }
}

std::vector<char> encodeFields(const PluginFieldCollection* fc) {
    std::vector<char> out;
    auto put = [&](const void* d, size_t n) { out.insert(out.end(), static_cast<const char*>(d), static_cast<const char*>(d) + n); };
    for (int32_t i = 0; fc && i < fc->nbFields; ++i) {
        const PluginField& f = fc->fields[i];
        const uint32_t nameLen = static_cast<uint32_t>(std::strlen(f.name));
        const int32_t type = static_cast<int32_t>(f.type);
        const uint32_t bytes = static_cast<uint32_t>(f.length * fieldBytes(f.type));
        put(&nameLen, 4); put(f.name, nameLen); put(&type, 4); put(&f.length, 4); put(&bytes, 4); put(f.data, bytes);
    }
    return out;
}

IPluginV3* decodeFields(const char* name, const char* data, size_t len) {
    std::deque<std::string> names;
    std::vector<PluginField> fields;
    size_t pos = 0;
    auto take = [&](void* d, size_t n) { if (pos + n > len) return false; std::memcpy(d, data + pos, n); pos += n; return true; };
    while (pos < len) {
        uint32_t nameLen, bytes;
        int32_t type, length;
        if (!take(&nameLen, 4) || pos + nameLen > len) return nullptr;
        names.emplace_back(data + pos, nameLen);
        pos += nameLen;
        if (!take(&type, 4) || !take(&length, 4) || !take(&bytes, 4) || pos + bytes > len) return nullptr;
        fields.emplace_back(names.back().c_str(), data + pos, static_cast<PluginFieldType>(type), length);
        pos += bytes;
    }
    PluginFieldCollection fc{static_cast<int32_t>(fields.size()), fields.data()};
    IPluginCreatorV3One* c = trtp::findV3Creator(name);
    return c ? c->createPlugin(name, &fc, TensorRTPhase::kRUNTIME) : nullptr;
}

std::vector<DynamicPluginTensorDesc> dynDescs(const Handle* h, int n, const int* types, const int64_t* dims) {
    std::vector<DynamicPluginTensorDesc> d(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
        d[i].desc = toDesc(dims + i * kDimsBlock, types[i], h->format(i));
        d[i].min = d[i].max = d[i].opt = d[i].desc.dims;
    }
    return d;
}

std::vector<PluginTensorDesc> descs(const Handle* h, int n, const int* types, const int64_t* dims) {
    std::vector<PluginTensorDesc> d(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) d[i] = toDesc(dims + i * kDimsBlock, types[i], h->format(i));
    return d;
}

} // namespace

#define TH_EXPORT extern "C" __attribute__((visibility("default")))

TH_EXPORT int th_trt_major() { return NV_TENSORRT_MAJOR; }

// api: 2 (IPluginV2DynamicExt, version 1) or 3 (IPluginV3, version 2; created for the build phase).
// fields: names[i], types[i] (PluginFieldType), data[i], lengths[i]
TH_EXPORT void* th_create(const char* name, int api, int n, const char** names, const int* types, const void** data, const int* lengths) {
    std::vector<PluginField> fields;
    for (int i = 0; i < n; ++i) fields.emplace_back(names[i], data[i], static_cast<PluginFieldType>(types[i]), lengths[i]);
    PluginFieldCollection fc{n, fields.data()};
    if (api == 3) {
        IPluginCreatorV3One* c = trtp::findV3Creator(name);
        return c ? wrapV3(c->createPlugin(name, &fc, TensorRTPhase::kBUILD)) : nullptr;
    }
    IPluginCreator* c = findCreator(name);
    return c ? wrapV2(c->createPlugin(name, &fc)) : nullptr;
}

// V2: the creator's deserializePlugin; V3: createPlugin(kRUNTIME) from the serialized fields.
TH_EXPORT void* th_deserialize(const char* name, int api, const void* blob, size_t len) {
    if (api == 3) return wrapV3(decodeFields(name, static_cast<const char*>(blob), len));
    IPluginCreator* c = findCreator(name);
    return c ? wrapV2(c->deserializePlugin(name, blob, len)) : nullptr;
}

// V2: the blob; V3: getFieldsToSerialize, encoded.
TH_EXPORT size_t th_serialize(void* p, void* buf, size_t cap) {
    if (H(p)->v3) {
        const auto bytes = encodeFields(H(p)->runtime()->getFieldsToSerialize());
        if (buf && cap >= bytes.size()) std::memcpy(buf, bytes.data(), bytes.size());
        return bytes.size();
    }
    size_t n = H(p)->v2->getSerializationSize();
    if (buf && cap >= n) H(p)->v2->serialize(buf);
    return n;
}

TH_EXPORT void* th_clone(void* p) { return H(p)->v3 ? wrapV3(H(p)->v3->clone()) : wrapV2(H(p)->v2->clone()); }
// V3: attachToContext (the per-context clone); V2: clone, as TensorRT does per context.
TH_EXPORT void* th_attach(void* p) { return H(p)->v3 ? wrapV3(H(p)->runtime()->attachToContext(nullptr)) : wrapV2(H(p)->v2->clone()); }
TH_EXPORT void th_destroy(void* p) {
    if (H(p)->v3) delete H(p)->v3;
    else H(p)->v2->destroy();
    delete H(p);
}
TH_EXPORT int th_api(void* p) { return H(p)->v3 ? 3 : 2; }
TH_EXPORT const char* th_version(void* p) {
    return H(p)->v3 ? static_cast<IPluginV3OneCore*>(H(p)->v3->getCapabilityInterface(PluginCapabilityType::kCORE))->getPluginVersion()
                    : H(p)->v2->getPluginVersion();
}
TH_EXPORT int th_nb_outputs(void* p) { return H(p)->v3 ? H(p)->build()->getNbOutputs() : H(p)->v2->getNbOutputs(); }
// V3 has no initialize: its weights come with configure / onShapeChange / runtime creation.
TH_EXPORT int th_initialize(void* p) { return H(p)->v3 ? 0 : H(p)->v2->initialize(); }
TH_EXPORT void th_terminate(void* p) {
    if (H(p)->v2) H(p)->v2->terminate();
}

TH_EXPORT int th_output_type(void* p, int index, const int* inTypes, int nbIn) {
    std::vector<DataType> t;
    for (int i = 0; i < nbIn; ++i) t.push_back(static_cast<DataType>(inTypes[i]));
    if (H(p)->v3) {
        const int nbOut = H(p)->build()->getNbOutputs();
        std::vector<DataType> out(static_cast<size_t>(nbOut > 0 ? nbOut : 1));
        if (index < 0 || index >= nbOut || H(p)->build()->getOutputDataTypes(out.data(), nbOut, t.data(), nbIn) != 0) return -1;
        return static_cast<int>(out[static_cast<size_t>(index)]);
    }
    return static_cast<int>(H(p)->v2->getOutputDataType(index, t.data(), nbIn));
}

// Writes the output dims block; returns nbDims (-1 on error).
TH_EXPORT int th_output_dims(void* p, int index, int nbIn, const int64_t* inDims, int64_t* outDims) {
    Builder b;
    std::vector<DimsExprs> in(static_cast<size_t>(nbIn));
    for (int i = 0; i < nbIn; ++i) {
        in[i].nbDims = static_cast<int32_t>(inDims[i * kDimsBlock]);
        for (int k = 0; k < in[i].nbDims; ++k) in[i].d[k] = b.constant(inDims[i * kDimsBlock + 1 + k]);
    }
    DimsExprs out{};
    if (H(p)->v3) {
        const int nbOut = H(p)->build()->getNbOutputs();
        std::vector<DimsExprs> outs(static_cast<size_t>(nbOut > 0 ? nbOut : 1));
        if (index < 0 || index >= nbOut || H(p)->build()->getOutputShapes(in.data(), nbIn, nullptr, 0, outs.data(), nbOut, b) != 0) return -1;
        out = outs[static_cast<size_t>(index)];
    } else {
        out = H(p)->v2->getOutputDimensions(index, in.data(), nbIn, b);
    }
    outDims[0] = out.nbDims;
    for (int k = 0; k < out.nbDims; ++k) outDims[1 + k] = out.d[k] ? out.d[k]->getConstantValue() : -1;
    return out.nbDims;
}

// dims: (nbIn + nbOut) blocks (build-time style, -1 allowed), or null: rank 0.
TH_EXPORT int th_supports(void* p, int pos, int nbIn, int nbOut, const int* types, const int* formats, const int64_t* dims) {
    std::vector<DynamicPluginTensorDesc> d(static_cast<size_t>(nbIn + nbOut));
    std::vector<PluginTensorDesc> plain(static_cast<size_t>(nbIn + nbOut));
    for (int i = 0; i < nbIn + nbOut; ++i) {
        plain[i].type = d[i].desc.type = static_cast<DataType>(types[i]);
        plain[i].format = d[i].desc.format = static_cast<TensorFormat>(formats[i]);
        if (dims) plain[i].dims = d[i].desc.dims = d[i].min = d[i].opt = d[i].max = toDims(dims + i * kDimsBlock);
    }
    if (H(p)->v3) return H(p)->build()->supportsFormatCombination(pos, d.data(), nbIn, nbOut) ? 1 : 0;
    return H(p)->v2->supportsFormatCombination(pos, plain.data(), nbIn, nbOut) ? 1 : 0;
}

// The formats (TensorFormat values, inputs then outputs) the following configure / enqueue calls give.
TH_EXPORT void th_set_formats(void* p, const int* formats, int n) { H(p)->formats.assign(formats, formats + n); }

// dims: (nbIn + nbOut) blocks; build-time style (-1 allowed) descriptors. Returns the V3 status (V2: 0).
TH_EXPORT int th_configure(void* p, int nbIn, int nbOut, const int* types, const int64_t* dims) {
    auto d = dynDescs(H(p), nbIn + nbOut, types, dims);
    if (H(p)->v3) return H(p)->build()->configurePlugin(d.data(), nbIn, d.data() + nbIn, nbOut);
    H(p)->v2->configurePlugin(d.data(), nbIn, d.data() + nbIn, nbOut);
    return 0;
}

// Run-time shapes: V3 onShapeChange; V2 has none (configurePlugin with the real dims, as TensorRT 8+ does).
TH_EXPORT int th_shape_change(void* p, int nbIn, int nbOut, const int* types, const int64_t* dims) {
    auto d = descs(H(p), nbIn + nbOut, types, dims);
    if (H(p)->v3) return H(p)->runtime()->onShapeChange(d.data(), nbIn, d.data() + nbIn, nbOut);
    return th_configure(p, nbIn, nbOut, types, dims);
}

TH_EXPORT size_t th_workspace(void* p, int nbIn, int nbOut, const int* types, const int64_t* dims) {
    if (H(p)->v3) {
        auto d = dynDescs(H(p), nbIn + nbOut, types, dims);
        return H(p)->build()->getWorkspaceSize(d.data(), nbIn, d.data() + nbIn, nbOut);
    }
    auto d = descs(H(p), nbIn + nbOut, types, dims);
    return H(p)->v2->getWorkspaceSize(d.data(), nbIn, d.data() + nbIn, nbOut);
}

namespace {
int enqueueWith(void* p, const std::vector<PluginTensorDesc>& d, int nbIn, void** inputs, void** outputs,
                void* workspace, void* stream) {
    const auto s = static_cast<cudaStream_t>(stream);
    if (H(p)->v3) return H(p)->runtime()->enqueue(d.data(), d.data() + nbIn, inputs, outputs, workspace, s);
    return H(p)->v2->enqueue(d.data(), d.data() + nbIn, inputs, outputs, workspace, s);
}
} // namespace

TH_EXPORT int th_enqueue(void* p, int nbIn, int nbOut, const int* types, const int64_t* dims, void** inputs,
                         void** outputs, void* workspace, void* stream) {
    return enqueueWith(p, descs(H(p), nbIn + nbOut, types, dims), nbIn, inputs, outputs, workspace, stream);
}

// Host time of one enqueue in microseconds, the median of `reps` timings of `iters` back-to-back
// enqueues (no GPU wait: what the plugin costs the thread that enqueues); -1 if one fails.
TH_EXPORT double th_enqueue_host_us(void* p, int nbIn, int nbOut, const int* types, const int64_t* dims,
                                    void** inputs, void** outputs, void* workspace, void* stream, int iters, int reps) {
    auto d = descs(H(p), nbIn + nbOut, types, dims);
    std::vector<double> us;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < iters; ++i)
            if (enqueueWith(p, d, nbIn, inputs, outputs, workspace, stream) != 0) return -1.0;
        us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters);
        cudaStreamSynchronize(static_cast<cudaStream_t>(stream)); // the timed loop itself never waits
    }
    std::sort(us.begin(), us.end());
    return us.empty() ? -1.0 : us[us.size() / 2];
}

TH_EXPORT size_t th_schema(char* buf, size_t cap) {
    const std::string s = trtp::schemaJson();
    if (buf && cap > s.size()) std::memcpy(buf, s.c_str(), s.size() + 1);
    return s.size();
}

// The GPU-support verdict for a described GPU (pure), and for the current device.
TH_EXPORT size_t th_gpu_problem(const char* name, int major, int minor, int hasImage, char* buf, size_t cap) {
    const std::string s = trtp::gpuProblem(name, major, minor, hasImage != 0);
    if (buf && cap) std::snprintf(buf, cap, "%s", s.c_str());
    return s.size();
}

TH_EXPORT size_t th_current_gpu_problem(char* buf, size_t cap) {
    const std::string s = trtp::currentGpuProblem();
    if (buf && cap) std::snprintf(buf, cap, "%s", s.c_str());
    return s.size();
}

TH_EXPORT const char* th_built_architectures() { return trtp::builtArchitectures(); }
