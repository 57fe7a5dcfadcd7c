// What every V2 plugin of this library shares: name/version/namespace, clone,
// destroy, serialization through the Writer/Reader blob, format support
// (linear FP32/FP16/BF16, one type for all tensors), same-shape outputs,
// device weights, shape validation and a guarded enqueue. An op's adapter
// declares its fields, its checks and its launch.
#pragma once
#include <NvInferRuntime.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "../kernels/types.h"
#include "device_weights.h"
#include "errors.h"
#include "fields.h"
#include "gpu_support.h"
#include "serialize.h"

namespace trtp {

constexpr const char* kPluginVersion = "1";

// Maps a TensorRT type to a kernel type; false for unsupported types.
bool toKernelType(nvinfer1::DataType t, DType& out) noexcept;
const char* typeName(nvinfer1::DataType t) noexcept;
// rows = product of all but the last dim; throws on negative (unknown) dims.
void rowsAndHidden(const nvinfer1::Dims& d, int64_t& rows, int64_t& hidden);
std::string dimsString(const nvinfer1::Dims& d);

// Derived provides:
//   static constexpr const char* kName; static constexpr int32_t kMinInputs, kMaxInputs;
//   static std::vector<FieldSpec> schema();
//   static Derived fromFields(const FieldParser&);  static Derived read(Reader&);
//   void write(Writer&) const;  int32_t getNbOutputs() const noexcept override;
//   HostWeights weights() const;
//   void onConfigured(DType, int64_t hidden);  // optional: per-shape choices (hidden known, not -1)
//   void checkDims(const nvinfer1::Dims* in, int32_t nbInputs) const;  // throws; -1 dims are skipped
//   cudaError_t launch(DType, const nvinfer1::PluginTensorDesc* in, int32_t nbInputs, const DeviceWeights&,
//                      const void* const* inputs, void* const* outputs, cudaStream_t) const;
template <class Derived>
class PluginBase : public nvinfer1::IPluginV2DynamicExt {
public:
    const char* getPluginType() const noexcept override { return Derived::kName; }
    const char* getPluginVersion() const noexcept override { return kPluginVersion; }
    void setPluginNamespace(const char* ns) noexcept override {
        guardedVoid(Derived::kName, "setPluginNamespace", [&] { mNamespace = ns ? ns : ""; });
    }
    const char* getPluginNamespace() const noexcept override { return mNamespace.c_str(); }
    void destroy() noexcept override { delete this; }

    // Thread-safe; uploads the weights in the current CUDA context (once).
    int32_t initialize() noexcept override {
        return guarded(Derived::kName, "initialize", -1, [&] {
            const std::string problem = currentGpuProblem();
            if (!problem.empty()) fail("%s", problem.c_str());
            mWeights.ensure(self().weights());
            return 0;
        });
    }
    void terminate() noexcept override { mWeights.reset(); }

    size_t getSerializationSize() const noexcept override {
        return guarded(Derived::kName, "getSerializationSize", size_t{0}, [&] { return blob().size(); });
    }
    void serialize(void* buffer) const noexcept override {
        guardedVoid(Derived::kName, "serialize", [&] {
            check(buffer != nullptr, "null buffer");
            blob().copyTo(buffer);
        });
    }

    // TensorRT does not initialize clones: a clone of an initialized plugin
    // uploads its own weights in the current context (never shared).
    nvinfer1::IPluginV2DynamicExt* clone() const noexcept override {
        return guarded(Derived::kName, "clone", static_cast<nvinfer1::IPluginV2DynamicExt*>(nullptr),
                       [&]() -> nvinfer1::IPluginV2DynamicExt* {
                           std::unique_ptr<Derived> c(new Derived(self()));
                           if (mWeights.ready()) c->mWeights.ensure(c->weights());
                           return c.release();
                       });
    }

    nvinfer1::DataType getOutputDataType(int32_t index, const nvinfer1::DataType* inputTypes,
                                         int32_t nbInputs) const noexcept override {
        if (index < 0 || index >= self().getNbOutputs() || nbInputs < 1 || !inputTypes) {
            log(nvinfer1::ILogger::Severity::kERROR, "%s: getOutputDataType(%d) with %d inputs", Derived::kName, index, nbInputs);
            return nvinfer1::DataType::kFLOAT;
        }
        return inputTypes[0];
    }

    // Every output has the shape of input 0.
    nvinfer1::DimsExprs getOutputDimensions(int32_t index, const nvinfer1::DimsExprs* inputs, int32_t nbInputs,
                                            nvinfer1::IExprBuilder&) noexcept override {
        if (index < 0 || index >= self().getNbOutputs() || nbInputs < Derived::kMinInputs || nbInputs > Derived::kMaxInputs || !inputs) {
            log(nvinfer1::ILogger::Severity::kERROR, "%s: getOutputDimensions(%d) with %d inputs (expected %d..%d)",
                Derived::kName, index, nbInputs, Derived::kMinInputs, Derived::kMaxInputs);
            nvinfer1::DimsExprs bad{};
            bad.nbDims = -1;
            return bad;
        }
        return inputs[0];
    }

    // Linear FP32/FP16/BF16, the same type for every input and output, and
    // shapes that pass checkDims. Too permissive a check gives wrong FP16 results.
    bool supportsFormatCombination(int32_t pos, const nvinfer1::PluginTensorDesc* inOut, int32_t nbInputs,
                                   int32_t nbOutputs) noexcept override {
        if (!gpuSupported()) return false;
        if (!inOut || nbInputs < Derived::kMinInputs || nbInputs > Derived::kMaxInputs || nbOutputs != self().getNbOutputs() || pos < 0 || pos >= nbInputs + nbOutputs)
            return false;
        const auto& d = inOut[pos];
        DType dt;
        if (d.format != nvinfer1::TensorFormat::kLINEAR || !toKernelType(d.type, dt)) return false;
        return pos == 0 || d.type == inOut[0].type;
    }

    void configurePlugin(const nvinfer1::DynamicPluginTensorDesc* in, int32_t nbInputs,
                         const nvinfer1::DynamicPluginTensorDesc* out, int32_t nbOutputs) noexcept override {
        guardedVoid(Derived::kName, "configurePlugin", [&] {
            checkCounts(nbInputs, nbOutputs);
            check(in != nullptr && out != nullptr, "null tensor descriptors");
            std::vector<nvinfer1::Dims> dims;
            for (int32_t i = 0; i < nbInputs; ++i) dims.push_back(in[i].desc.dims);
            self().checkDims(dims.data(), nbInputs);
            DType dt;
            const auto& x = in[0].desc.dims;
            if (toKernelType(in[0].desc.type, dt) && x.nbDims >= 1 && x.d[x.nbDims - 1] >= 0)
                mutableSelf().onConfigured(dt, x.d[x.nbDims - 1]);
        });
    }

    size_t getWorkspaceSize(const nvinfer1::PluginTensorDesc*, int32_t, const nvinfer1::PluginTensorDesc*,
                            int32_t) const noexcept override {
        return 0;
    }

    int32_t enqueue(const nvinfer1::PluginTensorDesc* inputDesc, const nvinfer1::PluginTensorDesc* outputDesc,
                    const void* const* inputs, void* const* outputs, void*, cudaStream_t stream) noexcept override {
        return guarded(Derived::kName, "enqueue", -1, [&] {
            check(inputDesc && outputDesc && inputs && outputs, "null descriptors or pointers");
            const int32_t nbInputs = mConfiguredInputs;
            DType dt;
            if (!toKernelType(inputDesc[0].type, dt)) fail("unsupported input type %s", typeName(inputDesc[0].type));
            for (int32_t i = 0; i < nbInputs; ++i)
                if (inputDesc[i].type != inputDesc[0].type) fail("input %d is %s, input 0 is %s", i, typeName(inputDesc[i].type), typeName(inputDesc[0].type));
            for (int32_t i = 0; i < self().getNbOutputs(); ++i)
                if (outputDesc[i].type != inputDesc[0].type) fail("output %d is %s, input 0 is %s", i, typeName(outputDesc[i].type), typeName(inputDesc[0].type));
            std::vector<nvinfer1::Dims> dims;
            for (int32_t i = 0; i < nbInputs; ++i) dims.push_back(inputDesc[i].dims);
            self().checkDims(dims.data(), nbInputs);
            int64_t rows, hidden;
            rowsAndHidden(inputDesc[0].dims, rows, hidden);
            if (rows == 0 || hidden == 0) return 0;
            const auto weights = mWeights.forLaunch(); // never uploads: enqueue may be captured in a CUDA graph
            cudaError_t err = self().launch(dt, inputDesc, nbInputs, *weights, inputs, outputs, stream);
            if (err != cudaSuccess) fail("kernel launch failed: %s", cudaGetErrorString(err));
            return 0;
        });
    }

    // Enqueue gets no input count: it comes from configurePlugin (default: the
    // maximum) and travels in the blob.
    void setInputCount(int32_t n) noexcept { mConfiguredInputs = n; }

protected:
    PluginBase() = default;
    PluginBase(const PluginBase&) = default;
    void onConfigured(DType, int64_t) {}

    void checkCounts(int32_t nbInputs, int32_t nbOutputs) {
        if (nbInputs < Derived::kMinInputs || nbInputs > Derived::kMaxInputs)
            fail("%d inputs, expected %d..%d", nbInputs, Derived::kMinInputs, Derived::kMaxInputs);
        if (nbOutputs != self().getNbOutputs()) fail("%d outputs, expected %d", nbOutputs, self().getNbOutputs());
        mConfiguredInputs = nbInputs;
    }

private:
    const Derived& self() const noexcept { return static_cast<const Derived&>(*this); }
    Derived& mutableSelf() noexcept { return static_cast<Derived&>(*this); }
    bool gpuSupported() const noexcept {
        const std::string problem = currentGpuProblem();
        if (problem.empty()) return true;
        static std::atomic<bool> said{false};
        if (!said.exchange(true)) log(nvinfer1::ILogger::Severity::kERROR, "%s::supportsFormatCombination: %s", Derived::kName, problem.c_str());
        return false;
    }
    Writer blob() const {
        Writer w(Derived::kName);
        w.pod(mConfiguredInputs);
        self().write(w);
        return w;
    }

    WeightsSlot mWeights;
    std::string mNamespace;
    int32_t mConfiguredInputs = Derived::kMaxInputs;
};

// One creator per plugin: field names from the schema, creation from checked
// fields, deserialization from checked blobs. Errors -> logged, nullptr.
template <class Plugin>
class Creator : public nvinfer1::IPluginCreator {
public:
    const char* getPluginName() const noexcept override { return Plugin::kName; }
    const char* getPluginVersion() const noexcept override { return kPluginVersion; }
    const nvinfer1::PluginFieldCollection* getFieldNames() noexcept override { return mNames.collection(); }

    nvinfer1::IPluginV2* createPlugin(const char*, const nvinfer1::PluginFieldCollection* fc) noexcept override {
        return guarded(Plugin::kName, "createPlugin", static_cast<nvinfer1::IPluginV2*>(nullptr), [&] {
            FieldParser parser(fc, Plugin::schema());
            return adopt(new Plugin(Plugin::fromFields(parser)));
        });
    }

    nvinfer1::IPluginV2* deserializePlugin(const char*, const void* data, size_t length) noexcept override {
        return guarded(Plugin::kName, "deserializePlugin", static_cast<nvinfer1::IPluginV2*>(nullptr), [&] {
            Reader reader(data, length, Plugin::kName);
            const auto nbInputs = reader.pod<int32_t>();
            if (nbInputs < Plugin::kMinInputs || nbInputs > Plugin::kMaxInputs) fail("serialized input count %d is invalid", nbInputs);
            auto plugin = Plugin::read(reader);
            reader.finish();
            plugin.setInputCount(nbInputs);
            return adopt(new Plugin(std::move(plugin)));
        });
    }

    void setPluginNamespace(const char* ns) noexcept override {
        guardedVoid(Plugin::kName, "setPluginNamespace", [&] { mNamespace = ns ? ns : ""; });
    }
    const char* getPluginNamespace() const noexcept override { return mNamespace.c_str(); }

private:
    nvinfer1::IPluginV2* adopt(Plugin* p) const {
        p->setPluginNamespace(mNamespace.c_str());
        return p;
    }
    FieldNames mNames{Plugin::schema()};
    std::string mNamespace;
};

} // namespace trtp
