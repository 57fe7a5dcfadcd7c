// OpRunner<Op>: what runs an op declaration, whoever calls it (the V2 and V3 adapters, the C entry):
// input and output counts, shape checks, per-shape choices, workspace size, device weights, launch.
// TensorRT-free; errors are thrown (PluginError), never returned half done.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <utility>

#include "gpu_support.h"
#include "op.h"

namespace trtp {

constexpr int32_t kMaxInputs = 8; // above every op's input count

template <class Op>
class OpRunner {
public:
    explicit OpRunner(Op op) : mOp(std::move(op)) {}
    OpRunner(const OpRunner&) = default; // the weights slot of a copy starts empty

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

    // Counts and shapes (build-time -1 dims skipped); the per-shape choices for the I/O type dt
    // (none when the type is not one the kernels take) and input 0's format.
    void configure(const Dims* in, int32_t nbIn, int32_t nbOut, std::optional<DType> dt, Format format = Format::kLinear) {
        checkCounts(nbIn, nbOut);
        check(in != nullptr, "null tensor descriptors");
        mOp.checkDims(in, nbIn);
        const Dims& x = in[0];
        if constexpr (UsesWorkspace<Op>::value) {
            if (dt && allKnown(x)) mOp.onConfiguredDims(*dt, format, in, nbIn);
        } else {
            (void)format;
            if (dt && x.nbDims >= 1 && x.d[x.nbDims - 1] >= 0) mOp.onConfigured(*dt, x.d[x.nbDims - 1]);
        }
    }

    // Scratch bytes for the largest dims of each input (0 for ops without the hook).
    size_t workspaceSize(const Dims* maxDims, int32_t nbIn, Format format = Format::kLinear) const {
        if constexpr (UsesWorkspace<Op>::value) {
            check(maxDims != nullptr && nbIn >= minInputs() && nbIn <= maxInputs(), "bad input descriptors");
            return mOp.workspaceSize(format, maxDims, nbIn);
        } else {
            (void)maxDims, (void)nbIn, (void)format;
            return 0;
        }
    }

    // What the last dim of every output is divided by (input 0's dims otherwise); throws on a bad rank.
    int64_t lastDimDivisor(int32_t nbIn) const {
        if constexpr (DividesLastDim<Op>::value) return mOp.lastDimDivisor(nbIn);
        (void)nbIn;
        return 1;
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

    // Launches on `stream`: every input and output of type dt (the caller checked), mNbInputs inputs.
    void enqueue(DType dt, const TensorDesc* in, const void* const* inputs, void* const* outputs, void* workspace,
                 cudaStream_t stream) const {
        check(in && inputs && outputs, "null descriptors or pointers");
        const int32_t nbIn = mNbInputs;
        std::array<Dims, kMaxInputs> dims{};
        for (int32_t i = 0; i < nbIn; ++i) dims[i] = in[i].dims;
        mOp.checkDims(dims.data(), nbIn);
        int64_t rows, hidden;
        rowsAndHidden(in[0].dims, rows, hidden);
        if (rows == 0 || hidden == 0) return;
        const auto weights = mWeights.forLaunch(); // never uploads: enqueue may be captured in a CUDA graph
        cudaError_t err;
        if constexpr (UsesWorkspace<Op>::value) err = mOp.launch(dt, in, nbIn, *weights, inputs, outputs, workspace, stream);
        else err = mOp.launch(dt, in, nbIn, *weights, inputs, outputs, stream), (void)workspace;
        if (err != cudaSuccess) fail("kernel launch failed: %s", cudaErrorText(err));
    }

private:
    Op mOp;
    WeightsSlot mWeights;
    int32_t mNbInputs = maxInputs(); // enqueue gets no input count: configure / onShapeChange / the blob give it
};

} // namespace trtp
