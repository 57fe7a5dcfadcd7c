// The IPluginV2DynamicExt adapter and its IPluginCreator, for any op
// declaration (adapters/op.h). Plugin version kV2Version; serialized as a
// checksummed blob of the input count and the op's fields (common/serialize.h).
// Every entry point is noexcept, logs and returns an error value.
#pragma once
#include <memory>

#include "op.h"

namespace trtp {

template <class Op>
class V2Plugin : public nvinfer1::IPluginV2DynamicExt {
public:
    explicit V2Plugin(Op op) : mS(std::move(op)) {}

    const char* getPluginType() const noexcept override { return Op::kName; }
    const char* getPluginVersion() const noexcept override { return kV2Version; }
    void setPluginNamespace(const char* ns) noexcept override {
        guardedVoid(Op::kName, "setPluginNamespace", [&] { mNamespace = ns ? ns : ""; });
    }
    const char* getPluginNamespace() const noexcept override { return mNamespace.c_str(); }
    void destroy() noexcept override { delete this; }
    int32_t getNbOutputs() const noexcept override { return mS.nbOutputs(); }

    // Thread-safe; uploads the weights in the current CUDA context (once).
    int32_t initialize() noexcept override {
        return guarded(Op::kName, "initialize", -1, [&] {
            mS.initialize();
            return 0;
        });
    }
    void terminate() noexcept override { mS.terminate(); }

    size_t getSerializationSize() const noexcept override {
        return guarded(Op::kName, "getSerializationSize", size_t{0}, [&] { return blob().size(); });
    }
    void serialize(void* buffer) const noexcept override {
        guardedVoid(Op::kName, "serialize", [&] {
            check(buffer != nullptr, "null buffer");
            blob().copyTo(buffer);
        });
    }
    static V2Plugin fromBlob(const void* data, size_t length) {
        Reader reader(data, length, Op::kName);
        const auto nbInputs = reader.pod<int32_t>();
        V2Plugin p(opFromBlob<Op>(reader));
        reader.finish();
        p.mS.setNbInputs(nbInputs);
        return p;
    }

    // TensorRT does not initialize clones: a clone of an initialized plugin
    // uploads its own weights in the current context (never shared).
    nvinfer1::IPluginV2DynamicExt* clone() const noexcept override {
        return guarded(Op::kName, "clone", static_cast<nvinfer1::IPluginV2DynamicExt*>(nullptr),
                       [&]() -> nvinfer1::IPluginV2DynamicExt* {
                           std::unique_ptr<V2Plugin> c(new V2Plugin(*this));
                           if (mS.ready()) c->mS.initialize();
                           return c.release();
                       });
    }

    nvinfer1::DataType getOutputDataType(int32_t index, const nvinfer1::DataType* inputTypes, int32_t nbInputs) const noexcept override {
        if (!mS.outputOk(index, nbInputs) || !inputTypes) {
            log(nvinfer1::ILogger::Severity::kERROR, "%s: getOutputDataType(%d) with %d inputs", Op::kName, index, nbInputs);
            return nvinfer1::DataType::kFLOAT;
        }
        return inputTypes[0];
    }

    nvinfer1::DimsExprs getOutputDimensions(int32_t index, const nvinfer1::DimsExprs* inputs, int32_t nbInputs,
                                            nvinfer1::IExprBuilder& b) noexcept override {
        nvinfer1::DimsExprs bad{};
        bad.nbDims = -1;
        if (!mS.outputOk(index, nbInputs) || !inputs) {
            log(nvinfer1::ILogger::Severity::kERROR, "%s: getOutputDimensions(%d) with %d inputs (expected %d..%d)", Op::kName,
                index, nbInputs, OpState<Op>::minInputs(), OpState<Op>::maxInputs());
            return bad;
        }
        return guarded(Op::kName, "getOutputDimensions", bad, [&] { return mS.outputDims(inputs, nbInputs, b); });
    }

    bool supportsFormatCombination(int32_t pos, const nvinfer1::PluginTensorDesc* inOut, int32_t nbInputs,
                                   int32_t nbOutputs) noexcept override {
        return mS.supports(pos, inOut, nbInputs, nbOutputs);
    }

    void configurePlugin(const nvinfer1::DynamicPluginTensorDesc* in, int32_t nbInputs, const nvinfer1::DynamicPluginTensorDesc* out,
                         int32_t nbOutputs) noexcept override {
        guardedVoid(Op::kName, "configurePlugin", [&] {
            check(out != nullptr, "null output descriptors");
            mS.configure(in, nbInputs, nbOutputs);
        });
    }

    size_t getWorkspaceSize(const nvinfer1::PluginTensorDesc* in, int32_t nbInputs, const nvinfer1::PluginTensorDesc*, int32_t) const noexcept override {
        return guarded(Op::kName, "getWorkspaceSize", size_t{0}, [&] { return mS.workspaceSize(in, nbInputs); });
    }

    int32_t enqueue(const nvinfer1::PluginTensorDesc* inputDesc, const nvinfer1::PluginTensorDesc* outputDesc, const void* const* inputs,
                    void* const* outputs, void* workspace, cudaStream_t stream) noexcept override {
        return guarded(Op::kName, "enqueue", -1, [&] { return mS.enqueue(inputDesc, outputDesc, inputs, outputs, workspace, stream); });
    }

private:
    V2Plugin(const V2Plugin&) = default;
    Writer blob() const {
        Writer w(Op::kName);
        w.pod(mS.nbInputs());
        FieldWriter fields;
        opToFields(mS.op(), fields);
        w.fields(fields.fields());
        return w;
    }

    OpState<Op> mS;
    std::string mNamespace;
};

// Field names from the declaration, creation from checked fields,
// deserialization from checked blobs. Errors -> logged, nullptr.
template <class Op>
class V2Creator : public nvinfer1::IPluginCreator {
public:
    const char* getPluginName() const noexcept override { return Op::kName; }
    const char* getPluginVersion() const noexcept override { return kV2Version; }
    const nvinfer1::PluginFieldCollection* getFieldNames() noexcept override { return mNames.collection(); }

    nvinfer1::IPluginV2* createPlugin(const char*, const nvinfer1::PluginFieldCollection* fc) noexcept override {
        return guarded(Op::kName, "createPlugin", static_cast<nvinfer1::IPluginV2*>(nullptr),
                       [&] { return adopt(new V2Plugin<Op>(opFromFields<Op>(rawFields(fc)))); });
    }

    nvinfer1::IPluginV2* deserializePlugin(const char*, const void* data, size_t length) noexcept override {
        return guarded(Op::kName, "deserializePlugin", static_cast<nvinfer1::IPluginV2*>(nullptr),
                       [&] { return adopt(new V2Plugin<Op>(V2Plugin<Op>::fromBlob(data, length))); });
    }

    void setPluginNamespace(const char* ns) noexcept override {
        guardedVoid(Op::kName, "setPluginNamespace", [&] { mNamespace = ns ? ns : ""; });
    }
    const char* getPluginNamespace() const noexcept override { return mNamespace.c_str(); }

private:
    nvinfer1::IPluginV2* adopt(V2Plugin<Op>* p) const {
        p->setPluginNamespace(mNamespace.c_str());
        return p;
    }
    FieldNames mNames{Op::schema()};
    std::string mNamespace;
};

} // namespace trtp
