// The IPluginV3 adapter (IPluginV3OneCore / OneBuild / OneRuntime) and its
// IPluginCreatorV3One, for any op declaration (adapters/op.h). Plugin version
// kV3Version; serialized as the op's own fields (getFieldsToSerialize), which
// the creator turns back into a plugin. One plugin object per execution
// context (attachToContext clones), each with its own device weights.
#pragma once
#include <memory>

#include "op.h"

namespace trtp {

template <class Op>
class V3Plugin : public nvinfer1::IPluginV3,
                 public nvinfer1::IPluginV3OneCore,
                 public nvinfer1::IPluginV3OneBuild,
                 public nvinfer1::IPluginV3OneRuntime {
public:
    V3Plugin(Op op, std::string ns) : mS(std::move(op)), mNamespace(std::move(ns)) {}

    nvinfer1::IPluginCapability* getCapabilityInterface(nvinfer1::PluginCapabilityType type) noexcept override {
        switch (type) {
        case nvinfer1::PluginCapabilityType::kCORE: return static_cast<nvinfer1::IPluginV3OneCore*>(this);
        case nvinfer1::PluginCapabilityType::kBUILD: return static_cast<nvinfer1::IPluginV3OneBuild*>(this);
        case nvinfer1::PluginCapabilityType::kRUNTIME: return static_cast<nvinfer1::IPluginV3OneRuntime*>(this);
        }
        return nullptr;
    }

    // A clone of a plugin with weights on the device uploads its own, in the current context.
    nvinfer1::IPluginV3* clone() noexcept override {
        return guarded(Op::kName, "clone", static_cast<nvinfer1::IPluginV3*>(nullptr), [&]() -> nvinfer1::IPluginV3* {
            std::unique_ptr<V3Plugin> c(new V3Plugin(*this));
            if (mS.ready()) c->mS.initialize();
            return c.release();
        });
    }

    // Core
    const char* getPluginName() const noexcept override { return Op::kName; }
    const char* getPluginVersion() const noexcept override { return kV3Version; }
    const char* getPluginNamespace() const noexcept override { return mNamespace.c_str(); }

    // Build
    int32_t getNbOutputs() const noexcept override { return mS.nbOutputs(); }

    int32_t getOutputDataTypes(nvinfer1::DataType* outputTypes, int32_t nbOutputs, const nvinfer1::DataType* inputTypes,
                               int32_t nbInputs) const noexcept override {
        return guarded(Op::kName, "getOutputDataTypes", -1, [&] {
            check(outputTypes && inputTypes && mS.countsOk(nbInputs, nbOutputs), "bad input/output counts or null types");
            for (int32_t i = 0; i < nbOutputs; ++i) outputTypes[i] = inputTypes[0];
            return 0;
        });
    }

    int32_t getOutputShapes(const nvinfer1::DimsExprs* inputs, int32_t nbInputs, const nvinfer1::DimsExprs*, int32_t,
                            nvinfer1::DimsExprs* outputs, int32_t nbOutputs, nvinfer1::IExprBuilder& b) noexcept override {
        return guarded(Op::kName, "getOutputShapes", -1, [&] {
            if (!inputs || !outputs || !mS.countsOk(nbInputs, nbOutputs))
                fail("%d inputs, %d outputs (expected %d..%d, %d)", nbInputs, nbOutputs, OpState<Op>::minInputs(),
                     OpState<Op>::maxInputs(), mS.nbOutputs());
            const nvinfer1::DimsExprs dims = mS.outputDims(inputs, nbInputs, b);
            for (int32_t i = 0; i < nbOutputs; ++i) outputs[i] = dims;
            return 0;
        });
    }

    bool supportsFormatCombination(int32_t pos, const nvinfer1::DynamicPluginTensorDesc* inOut, int32_t nbInputs,
                                   int32_t nbOutputs) noexcept override {
        return mS.supports(pos, inOut, nbInputs, nbOutputs);
    }

    // Build time: checks, per-shape choices, and the weights when a GPU is
    // there (the builder times enqueue); a CPU-only builder gets none.
    int32_t configurePlugin(const nvinfer1::DynamicPluginTensorDesc* in, int32_t nbInputs, const nvinfer1::DynamicPluginTensorDesc* out,
                            int32_t nbOutputs) noexcept override {
        return guarded(Op::kName, "configurePlugin", -1, [&] {
            check(out != nullptr, "null output descriptors");
            mS.configure(in, nbInputs, nbOutputs);
            if (currentDevice() >= 0) mS.initialize();
            return 0;
        });
    }

    size_t getWorkspaceSize(const nvinfer1::DynamicPluginTensorDesc* in, int32_t nbInputs, const nvinfer1::DynamicPluginTensorDesc*, int32_t) const noexcept override {
        return guarded(Op::kName, "getWorkspaceSize", size_t{0}, [&] { return mS.workspaceSize(in, nbInputs); });
    }

    // Runtime: real shapes; the weights are normally there already (created
    // for the runtime phase, or cloned by attachToContext).
    int32_t onShapeChange(const nvinfer1::PluginTensorDesc* in, int32_t nbInputs, const nvinfer1::PluginTensorDesc* out,
                          int32_t nbOutputs) noexcept override {
        return guarded(Op::kName, "onShapeChange", -1, [&] {
            check(out != nullptr, "null output descriptors");
            mS.configure(in, nbInputs, nbOutputs);
            if (!mS.ready()) mS.initialize();
            return 0;
        });
    }

    int32_t enqueue(const nvinfer1::PluginTensorDesc* inputDesc, const nvinfer1::PluginTensorDesc* outputDesc, const void* const* inputs,
                    void* const* outputs, void* workspace, cudaStream_t stream) noexcept override {
        return guarded(Op::kName, "enqueue", -1, [&] { return mS.enqueue(inputDesc, outputDesc, inputs, outputs, workspace, stream); });
    }

    // One plugin object per execution context, with its own weights.
    nvinfer1::IPluginV3* attachToContext(nvinfer1::IPluginResourceContext*) noexcept override { return clone(); }

    const nvinfer1::PluginFieldCollection* getFieldsToSerialize() noexcept override {
        return guarded(Op::kName, "getFieldsToSerialize", static_cast<const nvinfer1::PluginFieldCollection*>(nullptr), [&] {
            mFields.clear();
            opToFields(mS.op(), mFields);
            return mTrtFields.of(mFields.fields());
        });
    }

    // Runtime-phase creation (engine deserialization) uploads the weights.
    void initializeForRuntime() { mS.initialize(); }

private:
    V3Plugin(const V3Plugin& o) : mS(o.mS), mNamespace(o.mNamespace) {}

    OpState<Op> mS;
    std::string mNamespace;
    FieldWriter mFields;
    TrtFields mTrtFields;
};

template <class Op>
class V3Creator : public nvinfer1::IPluginCreatorV3One {
public:
    const char* getPluginName() const noexcept override { return Op::kName; }
    const char* getPluginVersion() const noexcept override { return kV3Version; }
    const char* getPluginNamespace() const noexcept override { return ""; }
    const nvinfer1::PluginFieldCollection* getFieldNames() noexcept override { return mNames.collection(); }

    nvinfer1::IPluginV3* createPlugin(const char*, const nvinfer1::PluginFieldCollection* fc, nvinfer1::TensorRTPhase phase) noexcept override {
        return guarded(Op::kName, "createPlugin", static_cast<nvinfer1::IPluginV3*>(nullptr), [&]() -> nvinfer1::IPluginV3* {
            std::unique_ptr<V3Plugin<Op>> p(new V3Plugin<Op>(opFromFields<Op>(rawFields(fc)), ""));
            if (phase == nvinfer1::TensorRTPhase::kRUNTIME && currentDevice() >= 0) p->initializeForRuntime();
            return p.release();
        });
    }

private:
    FieldNames mNames{Op::schema()};
};

} // namespace trtp
