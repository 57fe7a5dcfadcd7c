// Host-side checks of the plugin layer that need no GPU and no TensorRT
// library, run by tests/test_host_checks.py (and, built with
// -DTRTPLUGINS_TSAN=ON, under ThreadSanitizer):
//   host_checks fieldnames   a copied FieldNames points into its own fields
//   host_checks schema       prints the ops' schema JSON (trtplugins/schema.json is this output)
//   host_checks threads      concurrent clone / configure / initialize / serialize /
//                            deserialize / create / enqueue (no GPU: enqueue refuses) / destroy,
//                            on clones of one plugin and on the shared source
// Prints "ok <check> <count>" and exits 0, or prints why and exits 1.
#include <NvInferRuntime.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "../adapters/logging.h"
#include "../adapters/trt_fields.h"
#include "../registry/creators.h"

#include <cuda_runtime_api.h>

using namespace nvinfer1;

namespace {

std::atomic<int> gErrors{0};

// The application's logger, as any TensorRT user writes one: counts errors quietly.
class CountingLogger : public ILogger {
    void log(Severity s, const char*) noexcept override {
        if (s <= Severity::kERROR) gErrors.fetch_add(1);
    }
} gLogger;

int currentDeviceCount() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
    return n;
}

int failed(const char* what) {
    std::printf("FAILED %s\n", what);
    return 1;
}

int fieldNames() {
    auto* copy = new trtp::FieldNames(trtp::FieldNames({{"a", trtp::FieldKind::kString}, {"b", trtp::FieldKind::kWeights}}));
    trtp::FieldNames assigned({{"z", trtp::FieldKind::kInt}});
    {
        trtp::FieldNames source({{"norm", trtp::FieldKind::kString}, {"gamma", trtp::FieldKind::kWeights}});
        assigned = source;
        delete copy;
        copy = new trtp::FieldNames(source);
    } // source gone: the copies must not point into it
    for (auto* names : {copy->collection(), assigned.collection()}) {
        if (names->nbFields != 2 || std::strcmp(names->fields[0].name, "norm") || std::strcmp(names->fields[1].name, "gamma"))
            return failed("fieldnames");
        if (names->fields == nullptr) return failed("fieldnames: null fields");
    }
    trtp::FieldNames again(*copy);
    if (again.collection()->fields == copy->collection()->fields) return failed("fieldnames: a copy shares the source's array");
    delete copy;
    std::printf("ok fieldnames 3\n");
    return 0;
}

DynamicPluginTensorDesc desc(DataType t, std::initializer_list<int64_t> dims) {
    DynamicPluginTensorDesc d{};
    d.desc.type = t;
    d.desc.format = TensorFormat::kLINEAR;
    d.desc.dims.nbDims = static_cast<int32_t>(dims.size());
    int i = 0;
    for (auto v : dims) d.desc.dims.d[i++] = v;
    d.min = d.opt = d.max = d.desc.dims;
    return d;
}

int threads() {
    IPluginCreator* creator = trtp::findV2Creator("SkipNorm");
    if (!creator) return failed("no SkipNorm creator");
    std::vector<float> gamma(64, 1.f), beta(64, 0.5f);
    const char norm[] = "layer";
    const int32_t sum = 1;
    std::vector<PluginField> f{{"norm", norm, PluginFieldType::kCHAR, 6},
                               {"gamma", gamma.data(), PluginFieldType::kFLOAT32, 64},
                               {"beta", beta.data(), PluginFieldType::kFLOAT32, 64},
                               {"output_sum", &sum, PluginFieldType::kINT32, 1}};
    PluginFieldCollection fc{static_cast<int32_t>(f.size()), f.data()};
    auto* source = static_cast<IPluginV2DynamicExt*>(creator->createPlugin("SkipNorm", &fc));
    if (!source) return failed("createPlugin");
    IPluginCreatorV3One* creator3 = trtp::findV3Creator("SkipNorm");
    IPluginV3* source3 = creator3 ? creator3->createPlugin("SkipNorm", &fc, TensorRTPhase::kBUILD) : nullptr;
    if (!source3) return failed("V3 createPlugin");
    std::atomic<int> ops{0}, bad{0};
    auto work = [&](int t) {
        for (int it = 0; it < 150; ++it) {
            source->initialize(); // on the shared source: must be thread-safe
            auto* c = static_cast<IPluginV2DynamicExt*>(source->clone());
            if (!c) { bad++; continue; }
            const int nbIn = 1 + (it + t) % 2;
            const DataType dt = (it % 3 == 0) ? DataType::kHALF : DataType::kFLOAT;
            DynamicPluginTensorDesc d[4] = {desc(dt, {-1, 7, 64}), desc(dt, {-1, 7, 64}), desc(dt, {-1, 7, 64}), desc(dt, {-1, 7, 64})};
            c->configurePlugin(d, nbIn, d + nbIn, 2);
            PluginTensorDesc io[4];
            for (int i = 0; i < 4; ++i) io[i] = d[i].desc;
            for (int pos = 0; pos < nbIn + 2; ++pos) c->supportsFormatCombination(pos, io, nbIn, 2);
            std::vector<char> blob(c->getSerializationSize());
            c->serialize(blob.data());
            auto* back = creator->deserializePlugin("SkipNorm", blob.data(), blob.size());
            if (!back) bad++;
            else back->destroy();
            if (c->initialize() == 0) c->terminate();
            for (int i = 0; i < 4; ++i) io[i].dims.d[0] = 3;
            float dummy[1];
            const void* ins[2] = {dummy, dummy};
            void* outs[2] = {dummy, dummy};
            if (c->enqueue(io, io + nbIn, ins, outs, nullptr, nullptr) == 0) bad++; // not initialized: must refuse
            auto* fresh = creator->createPlugin("SkipNorm", &fc);
            if (fresh) fresh->destroy(); else bad++;
            creator->getFieldNames();
            c->destroy();
            ops += 8;

            // The same through IPluginV3: clone / attachToContext of a shared source, configure,
            // serialize to fields and re-create for the runtime phase, enqueue without weights.
            auto* rt = static_cast<IPluginV3OneRuntime*>(source3->getCapabilityInterface(PluginCapabilityType::kRUNTIME));
            IPluginV3* c3 = (it % 2) ? source3->clone() : rt->attachToContext(nullptr);
            if (!c3) { bad++; continue; }
            auto* b3 = static_cast<IPluginV3OneBuild*>(c3->getCapabilityInterface(PluginCapabilityType::kBUILD));
            auto* r3 = static_cast<IPluginV3OneRuntime*>(c3->getCapabilityInterface(PluginCapabilityType::kRUNTIME));
            if (b3->configurePlugin(d, nbIn, d + nbIn, 2) != 0) bad++;
            for (int pos = 0; pos < nbIn + 2; ++pos) b3->supportsFormatCombination(pos, d, nbIn, 2);
            IPluginV3* back3 = creator3->createPlugin("SkipNorm", r3->getFieldsToSerialize(), TensorRTPhase::kRUNTIME);
            if (!back3) bad++;
            delete back3;
            // no GPU: configure uploaded nothing, so enqueue must refuse (with a GPU it has weights: not launched on host pointers)
            if (currentDeviceCount() == 0 && r3->enqueue(io, io + nbIn, ins, outs, nullptr, nullptr) == 0) bad++;
            creator3->getFieldNames();
            delete c3;
            ops += 6;
        }
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < 8; ++t) pool.emplace_back(work, t);
    for (auto& th : pool) th.join();
    source->terminate();
    source->destroy();
    delete source3;
    if (bad) return failed("a concurrent call failed that must not");
    std::printf("ok threads %d\n", ops.load());
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    trtp::setLogger(&gLogger);
    int rc = 0;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "fieldnames")) rc |= fieldNames();
        else if (!std::strcmp(argv[i], "threads")) rc |= threads();
        else if (!std::strcmp(argv[i], "schema")) std::printf("%s", trtp::schemaJson().c_str());
        else rc |= failed(argv[i]);
    }
    return rc;
}
