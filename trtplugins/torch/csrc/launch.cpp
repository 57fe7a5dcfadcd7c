// The fused modules' eager CUDA calls in C++ (trtplugins/torch/_cpp.py builds it against the torch in use):
// what _kernels.py's prepared launches do in Python (contiguous inputs, the outputs, FP32 weight copies kept per
// weight, the current stream), then the kernel library's C entry. Each call returns None where it is not one
// this path takes (another device, dtype or shape form, a gradient asked for): the module then calls the op,
// which checks everything and says what is wrong.
#include <torch/extension.h>

#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <array>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "kernels.h"

namespace {

using at::Tensor;
using Opt = std::optional<Tensor>;

// The library's enum ids, from Python (trtplugins.kernels.enums()): dtypes float32, float16, bfloat16, and
// GroupNorm's skip modes none, full, per_channel.
std::array<int, 3> gDtypes{-1, -1, -1};
std::array<int, 3> gSkipModes{-1, -1, -1};

int dtypeId(const Tensor& x) {
    switch (x.scalar_type()) {
    case at::kFloat: return gDtypes[0];
    case at::kHalf: return gDtypes[1];
    case at::kBFloat16: return gDtypes[2];
    default: return -1;
    }
}

bool capturing() { return c10::cuda::currentStreamCaptureStatusMayInitCtx() != c10::cuda::CaptureStatus::None; }

// A weight's FP32 copy, kept while the weight is unchanged: the same object (a weak reference), version
// counter and storage. Not kept for an inference tensor (no version counter) or under capture (the graph's
// pool); copies of weights that died go when the table grows past kMaxKept. The table is never destroyed (its
// tensors are not freed at exit, after CUDA and torch's allocator may be gone).
struct Kept {
    c10::weak_intrusive_ptr<c10::TensorImpl> ref;
    int64_t version;
    const void* data;
    Tensor w32;
};
constexpr size_t kMaxKept = 4096;
std::mutex gKeptMutex;
std::unordered_map<const c10::TensorImpl*, Kept>& gKept = *new std::unordered_map<const c10::TensorImpl*, Kept>;

Tensor fp32(const Tensor& w) {
    if (w.scalar_type() == at::kFloat && w.is_contiguous()) return w;
    const bool keep = !w.is_inference() && !capturing();
    const c10::TensorImpl* key = w.unsafeGetTensorImpl();
    if (keep) {
        std::lock_guard<std::mutex> lock(gKeptMutex);
        const auto it = gKept.find(key);
        if (it != gKept.end() && !it->second.ref.expired() && it->second.version == w._version() &&
            it->second.data == w.data_ptr())
            return it->second.w32;
    }
    Tensor w32 = w.to(at::kFloat).contiguous();
    if (keep) {
        std::lock_guard<std::mutex> lock(gKeptMutex);
        if (gKept.size() >= kMaxKept)
            for (auto it = gKept.begin(); it != gKept.end();)
                it = it->second.ref.expired() ? gKept.erase(it) : std::next(it);
        gKept.insert_or_assign(
            key, Kept{c10::weak_intrusive_ptr<c10::TensorImpl>(w.getIntrusivePtr()), w._version(), w.data_ptr(), w32});
    }
    return w32;
}

// Whether a weight (absent, or `size` floating-point values on x's device) can go to the kernels.
bool weightOk(const Opt& w, const Tensor& x, int64_t size) {
    return !w || (w->is_floating_point() && w->device() == x.device() && w->numel() == size);
}

const float* ptr32(const Opt& w, Tensor& hold) {
    if (!w) return nullptr;
    hold = fp32(*w);
    return hold.data_ptr<float>();
}

// w itself as the kernels' exact 16-bit copy (x's 16-bit dtype, contiguous, 16-byte aligned), else null.
const void* io(const Opt& w, const Tensor& x) {
    if (!w || w->scalar_type() != x.scalar_type() || w->element_size() != 2 || !w->is_contiguous()) return nullptr;
    const void* p = w->data_ptr();
    return reinterpret_cast<uintptr_t>(p) % 16 == 0 ? p : nullptr;
}

// Whether the call is one for this path: x a CUDA tensor of a type the kernels take on the current device,
// the others on its device and of its type, no gradient asked for (the op's own error then).
bool takes(const Tensor& x, std::initializer_list<const Opt*> inputs, std::initializer_list<const Opt*> weights) {
    if (!x.is_cuda() || dtypeId(x) < 0 || x.get_device() != c10::cuda::current_device()) return false;
    for (const Opt* t : inputs)
        if (*t && ((*t)->scalar_type() != x.scalar_type() || (*t)->device() != x.device())) return false;
    if (!at::GradMode::is_enabled()) return true;
    const auto grad = [](const Opt* t) { return *t && (*t)->requires_grad(); };
    return !x.requires_grad() && std::none_of(inputs.begin(), inputs.end(), grad) &&
           std::none_of(weights.begin(), weights.end(), grad);
}

void check(int code, const char* op) {
    if (code) throw std::runtime_error(std::string("trtplugins::") + op + ": " + trtp_error_string(code));
}

void* stream(const Tensor& x) { return c10::cuda::getCurrentCUDAStream(x.get_device()).stream(); }

const void* ptrOr(const Opt& t) { return t ? t->data_ptr() : nullptr; }

// SkipNorm: norm(x (+ skip) (+ bias)) * gamma (+ beta); (y, sum) with output_sum. skip: x's shape, or its
// rows repeated over x's leading dims (trtp_skip_norm_skip_rows).
py::object skipNorm(const Tensor& x_, const Opt& skip_, const Tensor& gamma, const Opt& beta, const Opt& bias,
                    int64_t norm, double epsilon, bool outputSum) {
    const Opt g = gamma;
    if (x_.dim() < 1 || x_.size(-1) < 1 || !takes(x_, {&skip_}, {&g, &beta, &bias})) return py::none();
    const int64_t hidden = x_.size(-1), rows = x_.numel() / hidden;
    if (!weightOk(g, x_, hidden) || !weightOk(beta, x_, hidden) || !weightOk(bias, x_, hidden)) return py::none();
    static_assert(sizeof(long long) == sizeof(int64_t), "dims are passed as long long");
    const auto dims = [](const Tensor& t) { return reinterpret_cast<const long long*>(t.sizes().data()); };
    const long long skipRows =
        skip_ ? trtp_skip_norm_skip_rows(dims(x_), int(x_.dim()), dims(*skip_), int(skip_->dim())) : 0;
    if (skipRows < 0) return py::none();
    const Tensor x = x_.contiguous();
    const Opt skip = skip_ ? Opt(skip_->contiguous()) : Opt();
    Tensor y = at::empty_like(x), sum = outputSum ? at::empty_like(x) : Tensor();
    Tensor g32, b32, bias32;
    const void* gammaIo = io(g, x);
    const void* betaIo = gammaIo && beta ? io(beta, x) : nullptr;
    if (beta && !betaIo) gammaIo = nullptr; // both or neither
    check(trtp_skip_norm(dtypeId(x), x.data_ptr(), ptrOr(skip), ptr32(bias, bias32), ptr32(g, g32), ptr32(beta, b32),
                         y.data_ptr(), outputSum ? sum.data_ptr() : nullptr, rows, hidden, float(epsilon), int(norm),
                         skipRows, -1, gammaIo, betaIo, stream(x)),
          "skip_norm");
    return outputSum ? py::object(py::make_tuple(y, sum)) : py::cast(y);
}

// GroupNorm's design and plan per shape and device, as the plugin chooses them (trtp_group_norm_choose).
using GnChoice = std::array<long long, 9>; // the resident plan's 6 values, the split plan's 3
std::mutex gChoiceMutex;
std::map<std::array<long long, 8>, GnChoice> gChoices;

GnChoice gnChoice(int dt, int device, long long n, long long c, long long spatial, long long groups, int mode, int act) {
    const std::array<long long, 8> key{dt, device, n, c, spatial, groups, mode, act};
    {
        std::lock_guard<std::mutex> lock(gChoiceMutex);
        const auto it = gChoices.find(key);
        if (it != gChoices.end()) return it->second;
    }
    GnChoice choice{};
    trtp_group_norm_choose(dt, 0, 0, n, c, spatial, groups, mode, act, choice.data());
    std::lock_guard<std::mutex> lock(gChoiceMutex);
    if (gChoices.size() >= kMaxKept) gChoices.clear();
    return gChoices[key] = choice;
}

// GroupNorm over (N, C, spatial...) channels-first, activation act (the library's id), skip x's shape or
// [N, C, 1, ...]; (y, sum) with output_sum.
py::object groupNorm(const Tensor& x_, const Opt& skip_, int64_t groups, const Tensor& gamma, const Opt& beta,
                     const Opt& bias, int64_t act, double epsilon, bool outputSum) {
    const Opt g = gamma;
    if (x_.dim() < 3 || !takes(x_, {&skip_}, {&g, &beta, &bias})) return py::none();
    const int64_t n = x_.size(0), c = x_.size(1), spatial = n * c != 0 ? x_.numel() / (n * c) : 0;
    if (!spatial || groups < 1 || c % groups || !weightOk(g, x_, c) || !weightOk(beta, x_, c) || !weightOk(bias, x_, c))
        return py::none();
    int mode = gSkipModes[0];
    if (skip_) {
        std::vector<int64_t> perChannel(size_t(x_.dim()), 1);
        perChannel[0] = n, perChannel[1] = c;
        if (skip_->sizes() == x_.sizes()) mode = gSkipModes[1];
        else if (skip_->sizes() == c10::IntArrayRef(perChannel)) mode = gSkipModes[2];
        else return py::none();
    }
    const Tensor x = x_.contiguous();
    const Opt skip = skip_ ? Opt(skip_->contiguous()) : Opt();
    Tensor y = at::empty_like(x), sum = outputSum ? at::empty_like(x) : Tensor();
    const size_t size = trtp_group_norm_workspace(n, groups, -1);
    Tensor ws = at::empty({int64_t(size)}, x.options().dtype(at::kByte));
    Tensor g32, b32, bias32;
    const int dt = dtypeId(x);
    const GnChoice choice = gnChoice(dt, x.get_device(), n, c, spatial, groups, mode, int(act));
    check(trtp_group_norm_chosen(dt, 0, 0, x.data_ptr(), ptrOr(skip), mode, ptr32(bias, bias32), ptr32(g, g32),
                                 ptr32(beta, b32), y.data_ptr(), outputSum ? sum.data_ptr() : nullptr, ws.data_ptr(),
                                 size, n, c, spatial, groups, float(epsilon), int(act), choice.data(), stream(x)),
          "group_norm");
    return outputSum ? py::object(py::make_tuple(y, sum)) : py::cast(y);
}

// GatedActivation: the activation of one operand times the other, x and x2 (x's shape) or x's two halves of
// its last dim; act and gate: the library's ids.
py::object gatedActivation(const Tensor& x_, const Opt& x2_, const Opt& gateBias, const Opt& linearBias, int64_t act,
                           int64_t gate) {
    if (x_.dim() < 1 || !takes(x_, {&x2_}, {&gateBias, &linearBias})) return py::none();
    const int64_t last = x_.size(-1);
    if (!last || (!x2_ && last % 2) || (x2_ && x2_->sizes() != x_.sizes())) return py::none();
    const int64_t width = x2_ ? last : last / 2;
    if (!weightOk(gateBias, x_, width) || !weightOk(linearBias, x_, width)) return py::none();
    const Tensor x = x_.contiguous();
    const Opt x2 = x2_ ? Opt(x2_->contiguous()) : Opt();
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape.back() = width;
    Tensor y = at::empty(shape, x.options());
    Tensor gb, lb;
    check(trtp_gated_activation(dtypeId(x), x.data_ptr(), ptrOr(x2), ptr32(gateBias, gb), ptr32(linearBias, lb),
                                y.data_ptr(), x.numel() / last, width, int(act), int(gate), stream(x)),
          "gated_activation");
    return py::cast(y);
}

void setIds(std::array<int, 3> dtypes, std::array<int, 3> skipModes) { gDtypes = dtypes, gSkipModes = skipModes; }

} // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("set_ids", &setIds, "the library's enum ids: dtypes (float32, float16, bfloat16), GroupNorm skip modes");
    m.def("skip_norm", &skipNorm);
    m.def("group_norm", &groupNorm);
    m.def("gated_activation", &gatedActivation);
}
