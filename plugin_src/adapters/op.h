// OpState<Op>: an op's OpRunner (common/op_runner.h) seen through TensorRT's types, what the V2 and
// V3 adapters share: descriptors converted to the declarations' own, formats and types checked
// (too permissive a check gives wrong FP16 results), output dims as expressions.
#pragma once
#include <NvInferRuntime.h>

#include <array>
#include <optional>

#include "../common/op_runner.h"
#include "../ops/all_ops.h"
#include "logging.h"
#include "trt_fields.h"

namespace trtp {

// Maps a TensorRT type to a kernel type; false for unsupported types.
bool toKernelType(nvinfer1::DataType t, DType& out) noexcept;
// Maps a TensorRT format to the declarations' own; false for formats no op takes.
bool toFormat(nvinfer1::TensorFormat f, Format& out) noexcept;
const char* typeName(nvinfer1::DataType t) noexcept;
// Logs the current GPU's problem once; false when the GPU cannot run the kernels.
bool gpuSupported(const char* plugin) noexcept;

inline Dims toDims(const nvinfer1::Dims& d) {
    Dims out;
    out.nbDims = d.nbDims;
    for (int32_t i = 0; i < d.nbDims && i < kMaxDims; ++i) out.d[i] = d.d[i];
    return out;
}
inline const nvinfer1::PluginTensorDesc& plainDesc(const nvinfer1::PluginTensorDesc& d) { return d; }
inline const nvinfer1::PluginTensorDesc& plainDesc(const nvinfer1::DynamicPluginTensorDesc& d) { return d.desc; }
// The dims a descriptor has, and the largest it stands for (build time: the profile's max).
inline const nvinfer1::Dims& ownDims(const nvinfer1::PluginTensorDesc& d) { return d.dims; }
inline const nvinfer1::Dims& ownDims(const nvinfer1::DynamicPluginTensorDesc& d) { return d.desc.dims; }
inline const nvinfer1::Dims& maxDims(const nvinfer1::PluginTensorDesc& d) { return d.dims; }
inline const nvinfer1::Dims& maxDims(const nvinfer1::DynamicPluginTensorDesc& d) { return d.max; }

// The dims of n descriptors, picked by `pick` (ownDims or maxDims), in an array on the stack:
// enqueue gathers them on every launch.
template <class Desc, class Pick>
std::array<Dims, kMaxInputs> dimsOf(const Desc* desc, int32_t n, Pick pick) {
    check(n >= 0 && n <= kMaxInputs, "too many inputs");
    std::array<Dims, kMaxInputs> dims{};
    for (int32_t i = 0; i < n; ++i) dims[i] = toDims(pick(desc[i]));
    return dims;
}

template <class Op>
class OpState : public OpRunner<Op> {
    using Base = OpRunner<Op>;

public:
    using Base::Base;

    // FP32/FP16/BF16 in linear format or one the op declares for input 0 (its dims), one type and one
    // format for every input and output, on a GPU the build can run on.
    template <class Desc>
    bool supports(int32_t pos, const Desc* inOut, int32_t nbIn, int32_t nbOut) const noexcept {
        if (!gpuSupported(Op::kName)) return false;
        if (!inOut || !this->countsOk(nbIn, nbOut) || pos < 0 || pos >= nbIn + nbOut) return false;
        const auto& d = plainDesc(inOut[pos]);
        const auto& x = plainDesc(inOut[0]);
        DType dt;
        Format f;
        if (!toKernelType(d.type, dt) || !toFormat(d.format, f)) return false;
        if (pos > 0) return d.type == x.type && d.format == x.format;
        try {
            return formatOk<Op>(dt, f, toDims(d.dims));
        } catch (...) {
            return false;
        }
    }

    // Counts and shapes (build-time -1 dims skipped); the per-shape choices.
    template <class Desc>
    void configure(const Desc* in, int32_t nbIn, int32_t nbOut) {
        this->checkCounts(nbIn, nbOut);
        check(in != nullptr, "null tensor descriptors");
        DType dt;
        Format f;
        const bool known = toKernelType(plainDesc(in[0]).type, dt) && toFormat(plainDesc(in[0]).format, f);
        Base::configure(dimsOf(in, nbIn, [](const auto& d) -> const auto& { return ownDims(d); }).data(), nbIn, nbOut,
                        known ? std::optional<DType>(dt) : std::nullopt, known ? f : Format::kLinear);
    }

    // Scratch bytes for the largest dims the descriptors stand for (0 for ops without the hook).
    template <class Desc>
    size_t workspaceSize(const Desc* in, int32_t nbIn) const {
        if constexpr (UsesWorkspace<Op>::value) {
            check(in != nullptr && nbIn >= this->minInputs() && nbIn <= this->maxInputs(), "bad input descriptors");
            Format f = Format::kLinear;
            toFormat(plainDesc(in[0]).format, f);
            return Base::workspaceSize(dimsOf(in, nbIn, [](const auto& d) -> const auto& { return maxDims(d); }).data(), nbIn, f);
        } else {
            (void)in, (void)nbIn;
            return 0;
        }
    }

    // Every output's dims: input 0's, the last divided where the op says so.
    nvinfer1::DimsExprs outputDims(const nvinfer1::DimsExprs* in, int32_t nbIn, nvinfer1::IExprBuilder& b) const {
        nvinfer1::DimsExprs y = in[0];
        if constexpr (DividesLastDim<Op>::value) {
            if (y.nbDims < 1 || y.nbDims > kMaxDims) fail("input rank %d, expected 1..%d", y.nbDims, kMaxDims);
            const int64_t k = this->lastDimDivisor(nbIn);
            if (k == 1) return y;
            auto& last = y.d[y.nbDims - 1];
            last = last ? b.operation(nvinfer1::DimensionOperation::kFLOOR_DIV, *last, *b.constant(k)) : nullptr;
            if (!last) fail("no expression for the last dim divided by %lld", static_cast<long long>(k));
        }
        (void)nbIn, (void)b;
        return y;
    }

    int32_t enqueue(const nvinfer1::PluginTensorDesc* inputDesc, const nvinfer1::PluginTensorDesc* outputDesc,
                    const void* const* inputs, void* const* outputs, void* workspace, cudaStream_t stream) const {
        check(inputDesc && outputDesc && inputs && outputs, "null descriptors or pointers");
        const int32_t nbIn = this->nbInputs();
        DType dt;
        if (!toKernelType(inputDesc[0].type, dt)) fail("unsupported input type %s", typeName(inputDesc[0].type));
        for (int32_t i = 0; i < nbIn; ++i)
            if (inputDesc[i].type != inputDesc[0].type) fail("input %d is %s, input 0 is %s", i, typeName(inputDesc[i].type), typeName(inputDesc[0].type));
        for (int32_t i = 0; i < this->nbOutputs(); ++i)
            if (outputDesc[i].type != inputDesc[0].type) fail("output %d is %s, input 0 is %s", i, typeName(outputDesc[i].type), typeName(inputDesc[0].type));
        Format f;
        if (!toFormat(inputDesc[0].format, f) || !formatOk<Op>(dt, f, toDims(inputDesc[0].dims)))
            fail("input 0 has a format this plugin does not take (TensorFormat %d)", static_cast<int>(inputDesc[0].format));
        for (int32_t i = 1; i < nbIn; ++i)
            if (inputDesc[i].format != inputDesc[0].format) fail("input %d has another format than input 0", i);
        for (int32_t i = 0; i < this->nbOutputs(); ++i)
            if (outputDesc[i].format != inputDesc[0].format) fail("output %d has another format than input 0", i);
        std::array<TensorDesc, kMaxInputs> in{};
        for (int32_t i = 0; i < nbIn && i < kMaxInputs; ++i) in[i] = {toDims(inputDesc[i].dims), dt, f};
        Base::enqueue(dt, in.data(), inputs, outputs, workspace, stream);
        return 0;
    }
};

} // namespace trtp
