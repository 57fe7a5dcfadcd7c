// Minimal inference service: load the trtplugins library, deserialize a plan, run it.
//
//   service model.plan path/to/libtrtplugins_trt11_autoreg.so   # dlopen: creators self-register
//   service model.plan path/to/libtrtplugins_trt11.so --loadlib # IPluginRegistry::loadLibrary
//
// The library's libtrtplugins_kernels.so must be beside it (it is found through RPATH $ORIGIN).
// Inputs get their profile's opt shape and a ramp of values; the first outputs are printed.
// One Service per process, one Session (execution context + stream + buffers) per thread.
#include <NvInferRuntime.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

class Logger : public nvinfer1::ILogger {
    void log(Severity s, const char* msg) noexcept override {
        if (s <= Severity::kWARNING) std::fprintf(stderr, "[TensorRT] %s\n", msg);
    }
};

void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

size_t elementSize(nvinfer1::DataType t) {
    using nvinfer1::DataType;
    switch (t) {
    case DataType::kFLOAT: case DataType::kINT32: return 4;
    case DataType::kHALF: case DataType::kBF16: return 2;
    case DataType::kINT64: return 8;
    case DataType::kINT8: case DataType::kUINT8: case DataType::kBOOL: return 1;
    default: throw std::runtime_error("unsupported I/O data type");
    }
}

int64_t volume(const nvinfer1::Dims& d) {
    int64_t v = 1;
    for (int i = 0; i < d.nbDims; ++i) v *= d.d[i];
    return v;
}

// dlopen and loadLibrary look for a name without '/' on the library path, not in the current
// folder: a file that exists there is opened by its path.
std::string libraryPath(const std::string& lib) {
    if (lib.find('/') == std::string::npos && std::ifstream(lib).good()) return "./" + lib;
    return lib;
}

class Service {
public:
    Service(const std::string& plan, const std::string& libName, bool loadLib) {
        std::ifstream f(plan, std::ios::binary);
        std::vector<char> blob((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        if (blob.empty()) throw std::runtime_error("cannot read " + plan);
        std::string lib = libraryPath(libName);
        if (!loadLib && !dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL))  // registers its creators
            throw std::runtime_error(std::string("dlopen: ") + dlerror());
        int devices = 0;
        cudaError_t e = cudaGetDeviceCount(&devices);
        if (e != cudaSuccess || devices == 0)  // before TensorRT, which fails less clearly without one
            throw std::runtime_error(std::string("no CUDA device: ") + (e != cudaSuccess ? cudaGetErrorString(e) : "none"));
        runtime_.reset(nvinfer1::createInferRuntime(logger_));
        if (!runtime_) throw std::runtime_error("createInferRuntime failed");
        if (loadLib && !runtime_->getPluginRegistry().loadLibrary(lib.c_str()))
            throw std::runtime_error("loadLibrary refused " + lib);
        engine_.reset(runtime_->deserializeCudaEngine(blob.data(), blob.size()));
        if (!engine_) throw std::runtime_error("deserialize failed (plugin library loaded?)");
    }
    nvinfer1::ICudaEngine& engine() { return *engine_; }

private:
    Logger logger_;
    std::unique_ptr<nvinfer1::IRuntime> runtime_;  // must outlive the engine
    std::unique_ptr<nvinfer1::ICudaEngine> engine_;
};

// Per-thread state: never share an IExecutionContext between threads.
class Session {
public:
    explicit Session(nvinfer1::ICudaEngine& e) : engine_(e), ctx_(e.createExecutionContext()) {
        if (!ctx_) throw std::runtime_error("createExecutionContext failed");
        check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    }
    ~Session() {
        for (void* p : bufs_) cudaFree(p);
        cudaStreamDestroy(stream_);
    }

    void runOnce() {
        int n = engine_.getNbIOTensors();
        std::vector<std::vector<float>> host(n);
        for (int pass = 0; pass < 2; ++pass)  // inputs first: output shapes depend on them
            for (int i = 0; i < n; ++i) {
                const char* name = engine_.getIOTensorName(i);
                bool in = engine_.getTensorIOMode(name) == nvinfer1::TensorIOMode::kINPUT;
                if (in != (pass == 0)) continue;
                if (in) ctx_->setInputShape(name, engine_.getProfileShape(name, 0, nvinfer1::OptProfileSelector::kOPT));
                nvinfer1::Dims d = ctx_->getTensorShape(name);
                size_t bytes = volume(d) * elementSize(engine_.getTensorDataType(name));
                void* p = nullptr;
                check(cudaMalloc(&p, bytes), "cudaMalloc");
                bufs_.push_back(p);
                ctx_->setTensorAddress(name, p);
                if (in && engine_.getTensorDataType(name) == nvinfer1::DataType::kFLOAT) {
                    host[i].resize(volume(d));
                    for (size_t k = 0; k < host[i].size(); ++k) host[i][k] = float(k % 97) / 97.f;
                    check(cudaMemcpyAsync(p, host[i].data(), bytes, cudaMemcpyHostToDevice, stream_), "H2D");
                }
            }
        if (!ctx_->enqueueV3(stream_)) throw std::runtime_error("enqueueV3 failed");
        for (int i = 0; i < n; ++i) {
            const char* name = engine_.getIOTensorName(i);
            if (engine_.getTensorIOMode(name) != nvinfer1::TensorIOMode::kOUTPUT
                || engine_.getTensorDataType(name) != nvinfer1::DataType::kFLOAT)
                continue;
            host[i].resize(volume(ctx_->getTensorShape(name)));
            check(cudaMemcpyAsync(host[i].data(), ctx_->getTensorAddress(name), host[i].size() * 4,
                                  cudaMemcpyDeviceToHost, stream_), "D2H");
            check(cudaStreamSynchronize(stream_), "sync");
            std::printf("%s[0..4):", name);
            for (size_t k = 0; k < 4 && k < host[i].size(); ++k) std::printf(" %.5f", host[i][k]);
            std::printf("\n");
        }
    }

private:
    nvinfer1::ICudaEngine& engine_;
    std::unique_ptr<nvinfer1::IExecutionContext> ctx_;
    cudaStream_t stream_{};
    std::vector<void*> bufs_;
};

} // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s model.plan libtrtplugins_trtN[_autoreg].so [--loadlib]\n", argv[0]);
        return 2;
    }
    try {
        Service svc(argv[1], argv[2], argc > 3 && std::strcmp(argv[3], "--loadlib") == 0);
        Session(svc.engine()).runOnce();  // a server would keep one Session per worker thread
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
