// C ABI that drives the plugin methods directly, the way TensorRT calls them,
// with real tensor descriptors and a real IExprBuilder, but no TensorRT
// library: the GPU tests (tests/gpu/test_plugin_gpu.py) call it with ctypes.
// Dims travel as int64 blocks of 9: nbDims, d[0..7].
#include <NvInferRuntime.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <deque>
#include <vector>

#include "../common/errors.h"
#include "../common/gpu_support.h"
#include "../registry/creators.h"

using namespace nvinfer1;

namespace {

constexpr int kDimsBlock = 9;

// Constant-only dimension expressions, enough for shape-preserving plugins.
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

PluginTensorDesc toDesc(const int64_t* block, int32_t type) {
    PluginTensorDesc t{};
    t.dims = toDims(block);
    t.type = static_cast<DataType>(type);
    t.format = TensorFormat::kLINEAR;
    t.scale = 1.f;
    return t;
}

IPluginV2DynamicExt* dyn(void* p) { return static_cast<IPluginV2DynamicExt*>(p); }

IPluginCreator* findCreator(const char* name) { return trtp::findV2Creator(name); }

} // namespace

#define TH_EXPORT extern "C" __attribute__((visibility("default")))

TH_EXPORT int th_trt_major() { return NV_TENSORRT_MAJOR; }

// fields: names[i], types[i] (PluginFieldType), data[i], lengths[i]
TH_EXPORT void* th_create(const char* name, int n, const char** names, const int* types, const void** data, const int* lengths) {
    IPluginCreator* c = findCreator(name);
    if (!c) return nullptr;
    std::vector<PluginField> fields;
    for (int i = 0; i < n; ++i) fields.emplace_back(names[i], data[i], static_cast<PluginFieldType>(types[i]), lengths[i]);
    PluginFieldCollection fc{n, fields.data()};
    return c->createPlugin(name, &fc);
}

TH_EXPORT void* th_deserialize(const char* name, const void* blob, size_t len) {
    IPluginCreator* c = findCreator(name);
    return c ? c->deserializePlugin(name, blob, len) : nullptr;
}

TH_EXPORT size_t th_serialize(void* p, void* buf, size_t cap) {
    size_t n = dyn(p)->getSerializationSize();
    if (buf && cap >= n) dyn(p)->serialize(buf);
    return n;
}

TH_EXPORT void* th_clone(void* p) { return dyn(p)->clone(); }
TH_EXPORT void th_destroy(void* p) { dyn(p)->destroy(); }
TH_EXPORT int th_nb_outputs(void* p) { return dyn(p)->getNbOutputs(); }
TH_EXPORT int th_initialize(void* p) { return dyn(p)->initialize(); }
TH_EXPORT void th_terminate(void* p) { dyn(p)->terminate(); }

TH_EXPORT int th_output_type(void* p, int index, const int* inTypes, int nbIn) {
    std::vector<DataType> t;
    for (int i = 0; i < nbIn; ++i) t.push_back(static_cast<DataType>(inTypes[i]));
    return static_cast<int>(dyn(p)->getOutputDataType(index, t.data(), nbIn));
}

// Writes the output dims block; returns nbDims (-1 on error).
TH_EXPORT int th_output_dims(void* p, int index, int nbIn, const int64_t* inDims, int64_t* outDims) {
    Builder b;
    std::vector<DimsExprs> in(static_cast<size_t>(nbIn));
    for (int i = 0; i < nbIn; ++i) {
        in[i].nbDims = static_cast<int32_t>(inDims[i * kDimsBlock]);
        for (int k = 0; k < in[i].nbDims; ++k) in[i].d[k] = b.constant(inDims[i * kDimsBlock + 1 + k]);
    }
    DimsExprs out = dyn(p)->getOutputDimensions(index, in.data(), nbIn, b);
    outDims[0] = out.nbDims;
    for (int k = 0; k < out.nbDims; ++k) outDims[1 + k] = out.d[k] ? out.d[k]->getConstantValue() : -1;
    return out.nbDims;
}

TH_EXPORT int th_supports(void* p, int pos, int nbIn, int nbOut, const int* types, const int* formats) {
    std::vector<PluginTensorDesc> d(static_cast<size_t>(nbIn + nbOut));
    for (int i = 0; i < nbIn + nbOut; ++i) {
        d[i].type = static_cast<DataType>(types[i]);
        d[i].format = static_cast<TensorFormat>(formats[i]);
    }
    return dyn(p)->supportsFormatCombination(pos, d.data(), nbIn, nbOut) ? 1 : 0;
}

// dims: (nbIn + nbOut) blocks; build-time style (-1 allowed) descriptors.
TH_EXPORT void th_configure(void* p, int nbIn, int nbOut, const int* types, const int64_t* dims) {
    std::vector<DynamicPluginTensorDesc> d(static_cast<size_t>(nbIn + nbOut));
    for (int i = 0; i < nbIn + nbOut; ++i) {
        d[i].desc = toDesc(dims + i * kDimsBlock, types[i]);
        d[i].min = d[i].max = d[i].opt = d[i].desc.dims;
    }
    dyn(p)->configurePlugin(d.data(), nbIn, d.data() + nbIn, nbOut);
}

TH_EXPORT size_t th_workspace(void* p, int nbIn, int nbOut, const int* types, const int64_t* dims) {
    std::vector<PluginTensorDesc> d(static_cast<size_t>(nbIn + nbOut));
    for (int i = 0; i < nbIn + nbOut; ++i) d[i] = toDesc(dims + i * kDimsBlock, types[i]);
    return dyn(p)->getWorkspaceSize(d.data(), nbIn, d.data() + nbIn, nbOut);
}

TH_EXPORT int th_enqueue(void* p, int nbIn, int nbOut, const int* types, const int64_t* dims, void** inputs,
                         void** outputs, void* workspace, void* stream) {
    std::vector<PluginTensorDesc> d(static_cast<size_t>(nbIn + nbOut));
    for (int i = 0; i < nbIn + nbOut; ++i) d[i] = toDesc(dims + i * kDimsBlock, types[i]);
    return dyn(p)->enqueue(d.data(), d.data() + nbIn, inputs, outputs, workspace, static_cast<cudaStream_t>(stream));
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
