// What an op declaration provides, and OpState<Op>: everything the V2 and
// V3 adapters share (I/O counts, format rule, shape checks, output types and
// dims, device weights, guarded enqueue). An op (ops/<op>/<op>_op.h) declares:
//   static constexpr const char* kName;  struct Params;  static const OpSchema& schema();
//   static const FieldTable<Params>& fields();       // every field once (common/field_table.h)
//   static constexpr const char* kV1Layout[];        // the field order of its blobs of format 1
//   explicit Op(Params);  const Params& params() const;  // the constructor checks what the table cannot
//   int32_t nbOutputs() const;  HostWeights weights() const;
//   void checkDims(const nvinfer1::Dims* in, int32_t nbInputs) const;  // throws; -1 dims are skipped
//   void onConfigured(DType, int64_t hidden);                            // per-shape choices (hidden known)
//   cudaError_t launch(DType, const nvinfer1::PluginTensorDesc* in, int32_t nbInputs, const DeviceWeights&,
//                      const void* const* inputs, void* const* outputs, cudaStream_t) const;
// An op whose outputs are not shaped like input 0 declares (the same dims for every output; throws):
//   nvinfer1::DimsExprs outputDims(const nvinfer1::DimsExprs* in, int32_t nbInputs, nvinfer1::IExprBuilder&) const;
// An op that needs per-shape scratch memory declares instead of onConfigured and that launch:
//   void onConfiguredDims(DType, const nvinfer1::Dims* in, int32_t nbInputs);  // input 0's dims all known
//   size_t workspaceSize(const nvinfer1::Dims* in, int32_t nbInputs) const;    // bytes for these dims and any smaller
//   cudaError_t launch(..., const void* const* inputs, void* const* outputs, void* workspace, cudaStream_t) const;
// (the workspace comes from TensorRT: getWorkspaceSize of the profile's largest dims).
#pragma once
#include <NvInferRuntime.h>

#include <array>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../common/device_weights.h"
#include "../common/errors.h"
#include "../common/field_table.h"
#include "../common/fields.h"
#include "../common/gpu_support.h"
#include "../common/serialize.h"
#include "../device/types.h"

namespace trtp {

// Plugin versions: the same op under two interfaces in one library.
constexpr const char* kV2Version = "1"; // IPluginV2DynamicExt + IPluginCreator (deprecated by TensorRT; existing engines)
constexpr const char* kV3Version = "2"; // IPluginV3 (OneCore/Build/Runtime) + IPluginCreatorV3One

// Maps a TensorRT type to a kernel type; false for unsupported types.
bool toKernelType(nvinfer1::DataType t, DType& out) noexcept;
const char* typeName(nvinfer1::DataType t) noexcept;
// rows = product of all but the last dim; throws on negative (unknown) dims.
void rowsAndHidden(const nvinfer1::Dims& d, int64_t& rows, int64_t& hidden);
std::string dimsString(const nvinfer1::Dims& d);
// Logs the current GPU's problem once; false when the GPU cannot run the kernels.
bool gpuSupported(const char* plugin) noexcept;

inline const nvinfer1::PluginTensorDesc& plainDesc(const nvinfer1::PluginTensorDesc& d) { return d; }
inline const nvinfer1::PluginTensorDesc& plainDesc(const nvinfer1::DynamicPluginTensorDesc& d) { return d.desc; }
// The largest dims a descriptor stands for (build time: the profile's max).
inline const nvinfer1::Dims& maxDims(const nvinfer1::PluginTensorDesc& d) { return d.dims; }
inline const nvinfer1::Dims& ownDims(const nvinfer1::PluginTensorDesc& d) { return d.dims; }
inline const nvinfer1::Dims& ownDims(const nvinfer1::DynamicPluginTensorDesc& d) { return d.desc.dims; }

constexpr int32_t kMaxInputs = 8; // above every op's input count

// The dims of n descriptors, picked by `pick` (ownDims or maxDims), in an array on the stack:
// enqueue gathers them on every launch.
template <class Desc, class Pick>
std::array<nvinfer1::Dims, kMaxInputs> dimsOf(const Desc* desc, int32_t n, Pick pick) {
    check(n >= 0 && n <= kMaxInputs, "too many inputs");
    std::array<nvinfer1::Dims, kMaxInputs> dims{};
    for (int32_t i = 0; i < n; ++i) dims[i] = pick(desc[i]);
    return dims;
}
inline const nvinfer1::Dims& maxDims(const nvinfer1::DynamicPluginTensorDesc& d) { return d.max; }

// Whether an op declares the workspace hooks (see the top of this file).
template <class Op, class = void> struct UsesWorkspace : std::false_type {};
template <class Op>
struct UsesWorkspace<Op, std::void_t<decltype(std::declval<const Op&>().workspaceSize(
                             static_cast<const nvinfer1::Dims*>(nullptr), int32_t{}))>> : std::true_type {};

// Whether an op declares its output dims (see the top of this file).
template <class Op, class = void> struct DeclaresOutputDims : std::false_type {};
template <class Op>
struct DeclaresOutputDims<Op, std::void_t<decltype(std::declval<const Op&>().outputDims(
                                  static_cast<const nvinfer1::DimsExprs*>(nullptr), int32_t{},
                                  std::declval<nvinfer1::IExprBuilder&>()))>> : std::true_type {};

// An op from a creator's fields, and back: its field table both ways.
template <class Op>
Op opFromFields(const nvinfer1::PluginFieldCollection* fc) {
    return Op(readFields(Op::fields(), FieldParser(fc, Op::schema())));
}
template <class Op>
void opToFields(const Op& op, FieldWriter& w) {
    writeFields(Op::fields(), op.params(), w);
}
// An op from a V2 blob's payload: its fields (format 2), or its values in the op's own order (format 1).
template <class Op>
Op opFromBlob(Reader& r) {
    if (r.format() == kBlobFormatV1) return Op(readV1(Op::fields(), Op::kV1Layout, r));
    const BlobFields f = r.fields();
    const nvinfer1::PluginFieldCollection fc = f.collection();
    return opFromFields<Op>(&fc);
}

inline bool allKnown(const nvinfer1::Dims& d) {
    for (int32_t i = 0; i < d.nbDims; ++i)
        if (d.d[i] < 0) return false;
    return d.nbDims >= 1;
}

template <class Op>
class OpState {
public:
    explicit OpState(Op op) : mOp(std::move(op)) {}
    OpState(const OpState&) = default; // the weights slot of a copy starts empty

    static int32_t minInputs() { return Op::schema().minInputs(); }
    static int32_t maxInputs() { return Op::schema().maxInputs(); }
    int32_t nbOutputs() const noexcept { return mOp.nbOutputs(); }
    int32_t nbInputs() const noexcept { return mNbInputs; }
    void setNbInputs(int32_t n) {
        if (n < minInputs() || n > maxInputs()) fail("input count %d is invalid (expected %d..%d)", n, minInputs(), maxInputs());
        mNbInputs = n;
    }
    const Op& op() const noexcept { return mOp; }

    bool countsOk(int32_t nbIn, int32_t nbOut) const noexcept {
        return nbIn >= minInputs() && nbIn <= maxInputs() && nbOut == nbOutputs();
    }
    void checkCounts(int32_t nbIn, int32_t nbOut) {
        if (nbIn < minInputs() || nbIn > maxInputs()) fail("%d inputs, expected %d..%d", nbIn, minInputs(), maxInputs());
        if (nbOut != nbOutputs()) fail("%d outputs, expected %d", nbOut, nbOutputs());
        mNbInputs = nbIn;
    }

    // Linear FP32/FP16/BF16, one type for every input and output, on a GPU the
    // build can run on. Too permissive a check gives wrong FP16 results.
    template <class Desc>
    bool supports(int32_t pos, const Desc* inOut, int32_t nbIn, int32_t nbOut) const noexcept {
        if (!gpuSupported(Op::kName)) return false;
        if (!inOut || !countsOk(nbIn, nbOut) || pos < 0 || pos >= nbIn + nbOut) return false;
        const auto& d = plainDesc(inOut[pos]);
        DType dt;
        if (d.format != nvinfer1::TensorFormat::kLINEAR || !toKernelType(d.type, dt)) return false;
        return pos == 0 || d.type == plainDesc(inOut[0]).type;
    }

    // Counts and shapes (build-time -1 dims skipped); the per-shape choices.
    template <class Desc>
    void configure(const Desc* in, int32_t nbIn, int32_t nbOut) {
        checkCounts(nbIn, nbOut);
        check(in != nullptr, "null tensor descriptors");
        const auto dims = dimsOf(in, nbIn, [](const auto& d) { return ownDims(d); });
        mOp.checkDims(dims.data(), nbIn);
        DType dt;
        const auto& x = plainDesc(in[0]);
        if constexpr (UsesWorkspace<Op>::value) {
            if (toKernelType(x.type, dt) && allKnown(x.dims)) mOp.onConfiguredDims(dt, dims.data(), nbIn);
        } else {
            if (toKernelType(x.type, dt) && x.dims.nbDims >= 1 && x.dims.d[x.dims.nbDims - 1] >= 0)
                mOp.onConfigured(dt, x.dims.d[x.dims.nbDims - 1]);
        }
    }

    // Scratch bytes for the largest dims the descriptors stand for (0 for ops without the hook).
    template <class Desc>
    size_t workspaceSize(const Desc* in, int32_t nbIn) const {
        if constexpr (UsesWorkspace<Op>::value) {
            check(in != nullptr && nbIn >= minInputs() && nbIn <= maxInputs(), "bad input descriptors");
            return mOp.workspaceSize(dimsOf(in, nbIn, [](const auto& d) { return maxDims(d); }).data(), nbIn);
        } else {
            (void)in, (void)nbIn;
            return 0;
        }
    }

    // Every output's dims: the op's rule, else input 0's.
    nvinfer1::DimsExprs outputDims(const nvinfer1::DimsExprs* in, int32_t nbIn, nvinfer1::IExprBuilder& b) const {
        if constexpr (DeclaresOutputDims<Op>::value) {
            return mOp.outputDims(in, nbIn, b);
        } else {
            (void)nbIn, (void)b;
            return in[0];
        }
    }

    bool outputOk(int32_t index, int32_t nbIn) const noexcept {
        return index >= 0 && index < nbOutputs() && nbIn >= minInputs() && nbIn <= maxInputs();
    }

    // Uploads the weights in the current context (thread-safe, once).
    void initialize() {
        const std::string problem = currentGpuProblem();
        if (!problem.empty()) fail("%s", problem.c_str());
        mWeights.ensure(mOp.weights());
    }
    void terminate() noexcept { mWeights.reset(); }
    bool ready() const noexcept { return mWeights.ready(); }

    int32_t enqueue(const nvinfer1::PluginTensorDesc* inputDesc, const nvinfer1::PluginTensorDesc* outputDesc,
                    const void* const* inputs, void* const* outputs, void* workspace, cudaStream_t stream) const {
        check(inputDesc && outputDesc && inputs && outputs, "null descriptors or pointers");
        const int32_t nbIn = mNbInputs;
        DType dt;
        if (!toKernelType(inputDesc[0].type, dt)) fail("unsupported input type %s", typeName(inputDesc[0].type));
        for (int32_t i = 0; i < nbIn; ++i)
            if (inputDesc[i].type != inputDesc[0].type) fail("input %d is %s, input 0 is %s", i, typeName(inputDesc[i].type), typeName(inputDesc[0].type));
        for (int32_t i = 0; i < nbOutputs(); ++i)
            if (outputDesc[i].type != inputDesc[0].type) fail("output %d is %s, input 0 is %s", i, typeName(outputDesc[i].type), typeName(inputDesc[0].type));
        mOp.checkDims(dimsOf(inputDesc, nbIn, [](const auto& d) { return ownDims(d); }).data(), nbIn);
        int64_t rows, hidden;
        rowsAndHidden(inputDesc[0].dims, rows, hidden);
        if (rows == 0 || hidden == 0) return 0;
        const auto weights = mWeights.forLaunch(); // never uploads: enqueue may be captured in a CUDA graph
        cudaError_t err;
        if constexpr (UsesWorkspace<Op>::value) err = mOp.launch(dt, inputDesc, nbIn, *weights, inputs, outputs, workspace, stream);
        else err = mOp.launch(dt, inputDesc, nbIn, *weights, inputs, outputs, stream), (void)workspace;
        if (err != cudaSuccess) fail("kernel launch failed: %s", cudaGetErrorString(err));
        return 0;
    }

private:
    Op mOp;
    WeightsSlot mWeights;
    int32_t mNbInputs = maxInputs(); // enqueue gets no input count: configure / onShapeChange / the blob give it
};

} // namespace trtp
