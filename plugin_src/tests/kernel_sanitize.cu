// Runs every kernel path once over small odd and aligned shapes, for compute-sanitizer:
//   compute-sanitizer --tool memcheck|racecheck|initcheck|synccheck ./kernel_sanitize
// Buffers are sized exactly (plus the offset), so any out-of-bounds access is caught.
// Exit code 0 only if every launch and synchronisation returned cudaSuccess.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../ops/bias_activation/bias_activation.h"
#include "../ops/gated_activation/gated_activation.h"
#include "../ops/group_norm/group_norm.h"
#include "../ops/skip_norm/skip_norm.h"

namespace {

int failures = 0;

void check(cudaError_t e, const char* what, long long rows, long long hidden) {
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        std::printf("FAIL %s rows=%lld hidden=%lld: %s\n", what, rows, hidden, cudaGetErrorString(e));
        ++failures;
    }
}

// Device buffer of `bytes` at `offset`, filled with bytes < 0x40: finite values of any dtype.
struct Buf {
    char* base = nullptr;
    size_t offset = 0;
    Buf(size_t bytes, size_t off) : offset(off) {
        std::vector<unsigned char> host(bytes + off);
        for (size_t i = 0; i < host.size(); ++i) host[i] = (unsigned char)(rand() & 0x3f); // small exponents
        if (cudaMalloc(&base, host.size()) != cudaSuccess) std::abort();
        cudaMemcpy(base, host.data(), host.size(), cudaMemcpyHostToDevice);
    }
    ~Buf() { cudaFree(base); }
    void* p() const { return base + offset; }
};

size_t elemSize(trtp::DType dt) { return dt == trtp::DType::kFloat32 ? 4 : 2; }

// SkipNorm over x of rows x hidden at `off` bytes (weights at `woff`): both norms, with and without
// skip/bias/beta/sum, with and without 16-bit weight copies.
void skipNorms(trtp::DType dt, long long rows, long long hidden, size_t off, size_t woff) {
    const size_t n = size_t(rows * hidden), es = elemSize(dt);
    Buf x(n * es, off), skip(n * es, off), y(n * es, off), s(n * es, off);
    Buf bias(hidden * 4, woff), gamma(hidden * 4, woff), beta(hidden * 4, woff);
    Buf gammaIo(hidden * es, 0), betaIo(hidden * es, 0); // 16-bit copies (not read for FP32)
    for (int norm = 0; norm < 2; ++norm) {
        for (int full = 0; full < 4; ++full) { // bit 0: skip, bias, beta, sum; bit 1: 16-bit weights
            const bool all = full & 1;
            trtp::SkipNormArgs a;
            a.x = x.p();
            a.skip = all ? skip.p() : nullptr;
            a.bias = all ? static_cast<const float*>(bias.p()) : nullptr;
            a.gamma = static_cast<const float*>(gamma.p());
            a.beta = all ? static_cast<const float*>(beta.p()) : nullptr;
            a.y = y.p();
            a.sum = all ? s.p() : nullptr;
            a.rows = rows, a.hidden = hidden, a.norm = trtp::Norm(norm);
            if (full & 2) a.gammaIo = gammaIo.p(), a.betaIo = betaIo.p();
            check(trtp::launchSkipNorm(dt, a, 0), "skip_norm", rows, hidden);
        }
    }
}

// A GroupNorm launch over the buffers: skip mode `mode` (a full skip, or per channel in `chan`),
// bias, sum and SiLU with a skip, y over x (and the sum over a full skip) in place; shape sh = n, c,
// spatial, groups.
trtp::GroupNormArgs gnArgs(Buf& x, Buf& skip, Buf& chan, Buf& w, Buf& y, Buf& s, Buf& ws, size_t wsBytes, int mode,
                           bool inPlace, const long long (&sh)[4]) {
    trtp::GroupNormArgs a;
    a.x = x.p();
    a.skipMode = trtp::GroupNormSkip(mode);
    a.skip = mode == 1 ? skip.p() : mode == 2 ? chan.p() : nullptr;
    a.bias = mode ? static_cast<const float*>(w.p()) : nullptr;
    a.gamma = a.beta = static_cast<const float*>(w.p());
    a.y = inPlace ? x.p() : y.p();
    a.sum = !mode ? nullptr : inPlace && mode == 1 ? skip.p() : s.p();
    a.workspace = ws.p(), a.workspaceSize = wsBytes;
    a.n = sh[0], a.channels = sh[1], a.spatial = sh[2], a.groups = sh[3];
    a.act = trtp::GroupNormAct(mode % 2);
    return a;
}

} // namespace

// argv[1], if given: only that part (rows: BiasActivation and SkipNorm; gated; group_norm;
// group_norm_resident; group_norm_resident_small: its shapes up to 64K values, for racecheck).
int main(int argc, char** argv) {
    const std::string only = argc > 1 ? argv[1] : "";
    const auto want = [&](const char* part) { return only.empty() || only == part; };
    const long long hiddens[] = {1, 7, 64, 320, 768, 1001, 2048, 4096, 8190, 12001, 16384, 20000};
    const long long rowsList[] = {0, 1, 3};
    const trtp::DType dts[] = {trtp::DType::kFloat32, trtp::DType::kFloat16, trtp::DType::kBFloat16};
    if (want("rows")) for (trtp::DType dt : dts) {
        const size_t es = elemSize(dt);
        for (long long hidden : hiddens) {
            for (long long rows : rowsList) {
                for (int mode = 0; mode < 3; ++mode) { // aligned; one element off; the weights alone a float off
                    const size_t n = size_t(rows * hidden), off = mode == 1 ? es : 0, woff = mode ? 4 : 0;
                    Buf x(n * es, off), y(n * es, off), bias(hidden * 4, woff);
                    for (int act = 0; act <= int(trtp::Activation::kHardSwish); ++act) {
                        const float* b = act % 2 ? static_cast<const float*>(bias.p()) : nullptr;
                        check(trtp::launchBiasActivation(dt, x.p(), b, y.p(), rows, hidden, trtp::Activation(act), 0),
                              "bias_activation", rows, hidden);
                    }
                    check(trtp::launchBiasActivation(dt, y.p(), static_cast<const float*>(bias.p()), y.p(), rows,
                                                     hidden, trtp::Activation::kGelu, 0),
                          "bias_activation in place", rows, hidden);
                    skipNorms(dt, rows, hidden, off, woff);
                }
            }
        }
    }
    // SkipNorm launches past the small-launch limit (2^20 elements) run the large-row variants
    if (want("rows")) for (trtp::DType dt : dts) {
        const size_t es = elemSize(dt);
        for (long long hidden : {4096LL, 4100LL, 12289LL}) skipNorms(dt, (1LL << 20) / hidden + 1, hidden, 0, 0);
        skipNorms(dt, (1LL << 20) / 4096 + 1, 4096, es, 0); // misaligned rows
    }
    // GatedActivation: the halves of one buffer and two buffers (y over the second too), either operand
    // activated, every activation, biases on and off, odd widths and an unaligned offset (scalar path)
    const trtp::Activation gatedActs[] = {trtp::Activation::kRelu, trtp::Activation::kGelu,
                                          trtp::Activation::kGeluTanh, trtp::Activation::kSilu};
    if (want("gated")) for (trtp::DType dt : dts) {
        const size_t es = elemSize(dt);
        for (long long width : {1LL, 7LL, 8LL, 64LL, 1001LL, 4096LL, 12001LL}) {
            for (long long rows : rowsList) {
                for (size_t off : {size_t(0), es}) {
                    const size_t n = size_t(rows * width);
                    Buf halves(2 * n * es, off), x(n * es, off), x2(n * es, off), y(n * es, off);
                    Buf gateBias(width * 4, off ? 4 : 0), linearBias(width * 4, off ? 4 : 0);
                    for (int form = 0; form < 3; ++form) { // halves, two buffers, y over x2
                        for (trtp::Activation act : gatedActs) {
                            for (int gate = 0; gate < 2; ++gate) {
                                trtp::GatedActivationArgs a;
                                a.x = form ? x.p() : halves.p();
                                a.x2 = form ? x2.p() : nullptr;
                                a.gateBias = gate ? static_cast<const float*>(gateBias.p()) : nullptr;
                                a.linearBias = (gate + int(act)) % 2 ? static_cast<const float*>(linearBias.p()) : nullptr;
                                a.y = form == 2 ? x2.p() : y.p();
                                a.rows = rows, a.width = width, a.act = act, a.gate = trtp::GateOperand(gate);
                                check(trtp::launchGatedActivation(dt, a, 0), "gated_activation", rows, width);
                            }
                        }
                    }
                }
            }
        }
    }
    // GroupNorm: (n, c, spatial, groups) incl. an empty batch, 1 element per group, one group, odd
    // spatial sizes and groups split into chunks (ragged last chunks); skip none / like x / per (n, c);
    // bias, sum, SiLU; out of place and in place (y over x, the sum over the skip); each through the
    // plan the plugin picks, the two launches, and clusters of 1, 2, 8 and 16 CTAs (sm_90+)
    const long long gnShapes[][4] = {{0, 8, 16, 4}, {1, 32, 1, 32}, {2, 64, 49, 1}, {2, 16, 64, 4}, {1, 8, 5000, 2},
                                     {2, 32, 4096, 8}};
    const trtp::GroupNormDevice dev = trtp::groupNormDevice();
    std::printf("GroupNorm: %s (max cluster %d)\n", dev.maxCluster ? "clusters" : "two launches only", dev.maxCluster);
    if (want("group_norm")) for (trtp::DType dt : dts) {
        const size_t es = elemSize(dt);
        for (const auto& sh : gnShapes) {
            const long long n = sh[0], c = sh[1], hw = sh[2], g = sh[3], size = c / g * hw;
            for (size_t off : {size_t(0), es}) {
                const size_t total = size_t(n * c * hw);
                Buf x(total * es, off), skip(total * es, off), y(total * es, off), s(total * es, off);
                Buf chan(size_t(n * c) * es, off), w(size_t(c) * 4, 0);
                const size_t wsBytes = trtp::groupNormWorkspaceSize(n > 0 ? n : 1, g);
                Buf ws(wsBytes, 0);
                for (int mode = 0; mode < 3; ++mode) {
                    const auto skipMode = trtp::GroupNormSkip(mode);
                    std::vector<trtp::GroupNormPlan> plans = {trtp::groupNormConfigure(dt, n, g, size, skipMode),
                                                              trtp::groupNormPlan(dt, n, g, size, skipMode)};
                    for (long long cs : {1, 2, 8, 16}) {
                        trtp::GroupNormPlan p;
                        p.chunkLen = (size + cs - 1) / cs;
                        p.chunkLen = (p.chunkLen + 255) / 256 * 256;
                        p.chunks = (size + p.chunkLen - 1) / p.chunkLen;
                        p.cluster = true;
                        const long long bytes = p.chunkLen * static_cast<long long>(es) * (mode == 1 ? 2 : 1);
                        if (size > 0 && cs <= dev.maxCluster && bytes <= dev.smemPerBlock) plans.push_back(p);
                    }
                    for (const trtp::GroupNormPlan& plan : plans) {
                        for (int inPlace = 0; inPlace < 2; ++inPlace) {
                            trtp::GroupNormArgs a = gnArgs(x, skip, chan, w, y, s, ws, wsBytes, mode, inPlace, sh);
                            a.plan = plan;
                            trtp::GroupNormPlan ran;
                            check(trtp::launchGroupNorm(dt, a, 0, &ran), plan.cluster ? "group_norm cluster" : "group_norm",
                                  n * c, hw);
                            if (total && (ran.cluster != plan.cluster || ran.chunks != plan.chunks)) {
                                std::printf("FAIL group_norm: plan (%lld, %lld, %d) ran as (%lld, %lld, %d)\n",
                                            (long long)plan.chunks, (long long)plan.chunkLen, int(plan.cluster),
                                            (long long)ran.chunks, (long long)ran.chunkLen, int(ran.cluster));
                                ++failures;
                            }
                        }
                    }
                }
            }
        }
    }
    // GroupNorm's resident design: channels-last (channel stride = C, padded to 8 and 16) and, forced,
    // channels-first; the same shapes, skips and variants, in place too; each through the plan the plugin
    // picks, half of each range on chip, the two launches, whole segments per CTA and clusters per group
    const trtp::GroupNormResidentDevice rdev = trtp::groupNormResidentDevice();
    std::printf("GroupNorm resident: %s\n", rdev.sms ? "cooperative launches" : "two launches only");
    const bool smallOnly = only == "group_norm_resident_small";
    if (want("group_norm_resident") || smallOnly) for (trtp::DType dt : dts) {
        const size_t es = elemSize(dt);
        for (const auto& sh : gnShapes) {
            const long long n = sh[0], c = sh[1], hw = sh[2], g = sh[3];
            if (smallOnly && n * c * hw > 65536) continue;
            for (long long pad : {0, 1, 8, 16}) { // 0: channels-first
                const long long cs = pad ? (c + pad - 1) / pad * pad : c;
                const size_t total = size_t(n * hw * cs);
                Buf x(total * es, 0), skip(total * es, 0), y(total * es, 0), s(total * es, 0);
                Buf chan(size_t(n * cs) * es, 0), w(size_t(c) * 4, 0);
                const size_t wsBytes = trtp::groupNormWorkspaceSize(n > 0 ? n : 1, g);
                Buf ws(wsBytes, 0);
                for (int mode = 0; mode < 3; ++mode) {
                    trtp::GroupNormShape shape;
                    shape.n = n, shape.channels = c, shape.spatial = hw, shape.groups = g;
                    shape.layout = pad ? trtp::GroupNormLayout::kChannelsLast : trtp::GroupNormLayout::kChannelsFirst;
                    shape.channelStride = pad ? cs : 0, shape.skip = trtp::GroupNormSkip(mode);
                    if (pad && !trtp::groupNormChannelsLastOk(dt, c, cs)) continue;
                    std::vector<trtp::GroupNormResidentPlan> plans = {trtp::groupNormResidentConfigure(dt, shape, true),
                                                                      trtp::groupNormResidentPlan(dt, shape, true)};
                    if (plans[0].fused && plans[0].per > 1) {
                        trtp::GroupNormResidentPlan half = plans[0];
                        const long long align = pad ? 1 : 16 / static_cast<long long>(es);
                        half.resident = half.per / 2 / align * align;
                        if (half.resident < plans[0].resident) plans.push_back(half);
                    }
                    trtp::GroupNormResidentDevice two = rdev; // two CTAs per SM: 16-bit channels-last narrow
                    two.ctasPerSm = 2;
                    const trtp::GroupNormResidentPlan narrow = trtp::groupNormResidentPlan(dt, shape, true, two);
                    if (narrow.narrow) plans.push_back(narrow);
                    const trtp::GroupNormResidentPlan whole = trtp::groupNormWholeSegmentPlan(dt, shape, true, rdev);
                    if (whole.grid) plans.push_back(whole); // a CTA barrier, no grid-wide one
                    trtp::GroupNormResidentDevice cut = rdev; // channels-last: channel windows per range
                    cut.windows = 0;
                    const trtp::GroupNormResidentPlan windows = trtp::groupNormResidentPlan(dt, shape, true, cut);
                    if (pad && windows.fused && windows.per != plans[0].per) plans.push_back(windows);
                    for (int64_t k : {2, 3, 4, 8}) { // channels-first: each group one cluster of k CTAs
                        const auto cluster = trtp::groupNormClusterPlan(dt, shape, true, rdev, k);
                        if (cluster.grid && rdev.maxCluster >= k) plans.push_back(cluster);
                    }
                    for (const trtp::GroupNormResidentPlan& plan : plans) {
                        for (int inPlace = 0; inPlace < 2; ++inPlace) {
                            trtp::GroupNormArgs a = gnArgs(x, skip, chan, w, y, s, ws, wsBytes, mode, inPlace, sh);
                            a.layout = shape.layout, a.channelStride = shape.channelStride;
                            a.resident = plan;
                            trtp::GroupNormResidentPlan ran;
                            check(trtp::launchGroupNorm(dt, a, 0, nullptr, &ran),
                                  plan.fused ? "group_norm resident fused" : "group_norm resident", n * c, hw);
                            if (total && plan.grid && (ran.grid != plan.grid || ran.resident != plan.resident ||
                                                       ran.narrow != plan.narrow || ran.cluster != plan.cluster)) {
                                std::printf("FAIL group_norm resident: plan (%d, %lld, %lld) ran as (%d, %lld, %lld)\n",
                                            plan.grid, (long long)plan.per, (long long)plan.resident, ran.grid,
                                            (long long)ran.per, (long long)ran.resident);
                                ++failures;
                            }
                        }
                    }
                }
            }
        }
    }
    std::printf("%s: %d failures\n", failures ? "FAILED" : "OK", failures);
    return failures ? 1 : 0;
}
