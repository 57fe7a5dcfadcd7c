// What an op declaration (ops/<op>/<op>_op.h) includes, and what it provides. TensorRT-free: the
// declarations build into the kernel library; the adapters (adapters/) make plugins of them, the C
// entry (capi/run.cpp) runs them bare. An op declares:
//   static constexpr const char* kName;  static const OpSchema& schema();  (OpBase<Params>: params())
//   static const FieldTable<Params>& fields();       // every field once (common/field_table.h)
//   static constexpr const char* kV1Layout[];        // the field order of its blobs of format 1 (ops
//                                                    // that had some: a new op declares none)
//   explicit Op(Params);                             // checks what the table cannot
//   int32_t nbOutputs() const;  HostWeights weights() const;  // OpBase: one output
//   void checkDims(const Dims* in, int32_t nbInputs) const;  // throws; -1 dims are skipped
//   void onConfigured(DType, int64_t hidden);                  // per-shape choices (hidden known)
//   cudaError_t launch(DType, const TensorDesc* in, int32_t nbInputs, const DeviceWeights&,
//                      const void* const* inputs, void* const* outputs, cudaStream_t) const;
// An op whose outputs are input 0's dims with the last divided declares (throws on a bad rank):
//   int64_t lastDimDivisor(int32_t nbInputs) const;
// An op that takes channels-last formats besides linear declares which, for input 0 (every other
// input and output then has input 0's type and format; launch reads it from TensorDesc::format):
//   static bool acceptsFormat(DType, Format, const Dims& x);  // x: build-time dims (-1 unknown)
// An op that needs per-shape scratch memory declares instead of onConfigured and that launch:
//   void onConfiguredDims(DType, Format, const Dims* in, int32_t nbInputs);  // input 0's dims all known
//   size_t workspaceSize(Format, const Dims* in, int32_t nbInputs) const;    // bytes for these dims and any smaller
//   cudaError_t launch(..., const void* const* inputs, void* const* outputs, void* workspace, cudaStream_t) const;
// (the workspace comes from TensorRT: getWorkspaceSize of the profile's largest dims).
#pragma once
#include <cuda_runtime_api.h>

#include <type_traits>
#include <utility>

#include "device_weights.h"
#include "errors.h"
#include "field_table.h"
#include "tensor.h"

namespace trtp {

// What declarations share: their parameters (the derived constructor checks what the field table
// cannot), one output and no per-shape choice unless they declare otherwise.
template <class P>
class OpBase {
public:
    using Params = P;
    explicit OpBase(P p) : mP(std::move(p)) {}
    const P& params() const noexcept { return mP; }
    int32_t nbOutputs() const noexcept { return 1; }
    void onConfigured(DType, int64_t) {}

protected:
    P mP;
};

// Whether an op declares the workspace hooks.
template <class Op, class = void> struct UsesWorkspace : std::false_type {};
template <class Op>
struct UsesWorkspace<Op, std::void_t<decltype(std::declval<const Op&>().workspaceSize(Format{}, static_cast<const Dims*>(nullptr),
                                                                                         int32_t{}))>> : std::true_type {};

// Whether an op takes formats besides linear.
template <class Op, class = void> struct AcceptsFormats : std::false_type {};
template <class Op>
struct AcceptsFormats<Op, std::void_t<decltype(Op::acceptsFormat(DType{}, Format{}, std::declval<const Dims&>()))>>
    : std::true_type {};

// Whether an op's input 0 may have format f (linear: always).
template <class Op> bool formatOk(DType dt, Format f, const Dims& x) {
    if (f == Format::kLinear) return true;
    if constexpr (AcceptsFormats<Op>::value) return Op::acceptsFormat(dt, f, x);
    (void)dt, (void)x;
    return false;
}

// Whether an op divides the last dim of its outputs.
template <class Op, class = void> struct DividesLastDim : std::false_type {};
template <class Op>
struct DividesLastDim<Op, std::void_t<decltype(std::declval<const Op&>().lastDimDivisor(int32_t{}))>> : std::true_type {};

// An op from a creator's fields, and back: its field table both ways.
template <class Op>
Op opFromFields(const std::vector<RawField>& fields) {
    return Op(readFields(Op::fields(), FieldParser(fields, Op::schema())));
}
template <class Op>
void opToFields(const Op& op, FieldWriter& w) {
    writeFields(Op::fields(), op.params(), w);
}
// Whether an op had blobs of format 1 (and so declares their layout).
template <class Op, class = void> struct HasV1Layout : std::false_type {};
template <class Op> struct HasV1Layout<Op, std::void_t<decltype(Op::kV1Layout)>> : std::true_type {};

// An op from a V2 blob's payload: its fields (format 2), or its values in the op's own order (format 1).
template <class Op>
Op opFromBlob(Reader& r) {
    if (r.format() == kBlobFormatV1) {
        if constexpr (HasV1Layout<Op>::value) return Op(readV1(Op::fields(), Op::kV1Layout, r));
        fail("%s has no blobs of format 1", Op::kName);
    }
    return opFromFields<Op>(r.fields().fields);
}

} // namespace trtp
