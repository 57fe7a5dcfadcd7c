// The C entry for any op by name (run.h).
#include "run.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../common/op_runner.h"
#include "../ops/all_ops.h"


namespace {

using namespace trtp;

thread_local std::string gError;

// One op behind a name: the runner of whichever op it is.
struct AnyOp {
    virtual ~AnyOp() = default;
    virtual int32_t nbOutputs() const = 0;
    virtual int64_t lastDimDivisor(int32_t nbIn) const = 0;
    virtual void configure(const Dims* in, int32_t nbIn, int32_t nbOut, DType dt) = 0;
    virtual size_t workspaceSize(const Dims* in, int32_t nbIn) const = 0;
    virtual void initialize() = 0;
    virtual void enqueue(DType dt, const TensorDesc* in, const void* const* inputs, void* const* outputs, void* workspace,
                         cudaStream_t stream) const = 0;
};

template <class Op>
struct Runner : AnyOp {
    explicit Runner(const std::vector<RawField>& fields) : r(opFromFields<Op>(fields)) {}
    int32_t nbOutputs() const override { return r.nbOutputs(); }
    int64_t lastDimDivisor(int32_t nbIn) const override { return r.lastDimDivisor(nbIn); }
    void configure(const Dims* in, int32_t nbIn, int32_t nbOut, DType dt) override { r.configure(in, nbIn, nbOut, dt); }
    size_t workspaceSize(const Dims* in, int32_t nbIn) const override { return r.workspaceSize(in, nbIn); }
    void initialize() override { r.initialize(); }
    void enqueue(DType dt, const TensorDesc* in, const void* const* inputs, void* const* outputs, void* workspace,
                 cudaStream_t stream) const override {
        r.enqueue(dt, in, inputs, outputs, workspace, stream);
    }
    OpRunner<Op> r;
};

template <class... Ops>
struct Factory {
    static std::unique_ptr<AnyOp> make(const char* name, const std::vector<RawField>& fields) {
        std::unique_ptr<AnyOp> op;
        ((!op && std::strcmp(name, Ops::kName) == 0 ? (op = std::make_unique<Runner<Ops>>(fields), true) : false), ...);
        if (!op) fail("unknown op '%s'", name);
        return op;
    }
};

constexpr int kDimsBlock = 9;

// Descriptors of n tensors of one dtype (every input and output of an op has input 0's).
std::vector<TensorDesc> descs(int n, const int* dtypes, const long long* dims) {
    check(n >= 0 && n <= kMaxInputs && (n == 0 || (dtypes && dims)), "bad tensor descriptions");
    std::vector<TensorDesc> out(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
        check(dtypes[i] >= 0 && dtypes[i] <= 2, "unknown dtype id");
        if (dtypes[i] != dtypes[0]) fail("tensor %d has dtype %d, input 0 has %d", i, dtypes[i], dtypes[0]);
        out[i].type = static_cast<DType>(dtypes[i]);
        out[i].dims.nbDims = static_cast<int32_t>(dims[i * kDimsBlock]);
        for (int k = 0; k < out[i].dims.nbDims && k < kMaxDims; ++k) out[i].dims.d[k] = dims[i * kDimsBlock + 1 + k];
    }
    return out;
}

std::vector<Dims> dimsOf(const std::vector<TensorDesc>& d) {
    std::vector<Dims> out;
    for (const auto& t : d) out.push_back(t.dims);
    return out;
}

template <class R, class F>
R guard(R onError, F&& fn) noexcept {
    try {
        gError.clear();
        return fn();
    } catch (const std::exception& e) {
        gError = e.what();
    } catch (...) {
        gError = "unknown error";
    }
    return onError;
}

AnyOp* H(void* h) {
    check(h != nullptr, "null op handle");
    return static_cast<AnyOp*>(h);
}

} // namespace

TRTP_API void* trtp_op_create(const char* op, int n, const char* const* names, const int* types, const void* const* data,
                              const int* lengths) {
    return guard<void*>(nullptr, [&]() -> void* {
        check(op != nullptr && n >= 0 && (n == 0 || (names && types && data && lengths)), "bad op name or fields");
        std::vector<RawField> fields;
        for (int i = 0; i < n; ++i) fields.push_back({names[i], data[i], static_cast<FieldType>(types[i]), lengths[i]});
        return AllOps::Apply<Factory>::make(op, fields).release();
    });
}

TRTP_API void trtp_op_destroy(void* h) { delete static_cast<AnyOp*>(h); }

TRTP_API int trtp_op_nb_outputs(void* h) {
    return guard(-1, [&] { return H(h)->nbOutputs(); });
}

TRTP_API int trtp_op_output_dims(void* h, int nb_in, const int* dtypes, const long long* dims, long long* out) {
    return guard(-1, [&] {
        const auto d = descs(nb_in, dtypes, dims);
        check(nb_in >= 1 && out != nullptr, "no input or no output block");
        const Dims& x = d[0].dims;
        if (x.nbDims < 1 || x.nbDims > kMaxDims) fail("input rank %d, expected 1..%d", x.nbDims, kMaxDims);
        const int64_t k = H(h)->lastDimDivisor(nb_in);
        out[0] = x.nbDims;
        for (int i = 0; i < x.nbDims; ++i) out[1 + i] = i + 1 == x.nbDims ? x.d[i] / k : x.d[i];
        return 0;
    });
}

TRTP_API int trtp_op_configure(void* h, int nb_in, int nb_out, const int* dtypes, const long long* dims) {
    return guard(-1, [&] {
        const auto d = descs(nb_in + nb_out, dtypes, dims);
        check(nb_in >= 1, "no input");
        H(h)->configure(dimsOf(d).data(), nb_in, nb_out, d[0].type);
        return 0;
    });
}

TRTP_API long long trtp_op_workspace(void* h, int nb_in, const int* dtypes, const long long* dims) {
    return guard(-1LL, [&] { return static_cast<long long>(H(h)->workspaceSize(dimsOf(descs(nb_in, dtypes, dims)).data(), nb_in)); });
}

TRTP_API int trtp_op_initialize(void* h) {
    return guard(-1, [&] {
        H(h)->initialize();
        return 0;
    });
}

TRTP_API int trtp_op_enqueue(void* h, int nb_in, int nb_out, const int* dtypes, const long long* dims,
                             const void* const* inputs, void* const* outputs, void* workspace, void* stream) {
    return guard(-1, [&] {
        const auto d = descs(nb_in + nb_out, dtypes, dims);
        check(nb_in >= 1, "no input");
        H(h)->enqueue(d[0].type, d.data(), inputs, outputs, workspace, static_cast<cudaStream_t>(stream));
        return 0;
    });
}

TRTP_API int trtp_run(const char* op, int n, const char* const* names, const int* types, const void* const* data,
                      const int* lengths, int nb_in, int nb_out, const int* dtypes, const long long* dims,
                      const void* const* inputs, void* const* outputs, void* workspace, size_t workspace_size,
                      void* stream) {
    std::unique_ptr<AnyOp> h(static_cast<AnyOp*>(trtp_op_create(op, n, names, types, data, lengths)));
    if (!h || trtp_op_configure(h.get(), nb_in, nb_out, dtypes, dims) != 0 || trtp_op_initialize(h.get()) != 0) return -1;
    const long long need = trtp_op_workspace(h.get(), nb_in, dtypes, dims);
    if (need < 0) return -1;
    if (static_cast<unsigned long long>(need) > workspace_size) {
        gError = "workspace of " + std::to_string(workspace_size) + " bytes, the op needs " + std::to_string(need);
        return -1;
    }
    return trtp_op_enqueue(h.get(), nb_in, nb_out, dtypes, dims, inputs, outputs, workspace, stream);
}

TRTP_API const char* trtp_last_error() { return gError.c_str(); }

TRTP_API const char* trtp_schema() {
    static const std::string s = trtp::schemaJson();
    return s.c_str();
}
