// GroupNorm's resident design, host side: a shape's derived sizes per pack width and channel window, and
// the rules on them that its plans and launches share (resident.cu).
#pragma once
#include "resident_kernel.cuh"

namespace trtp {
namespace {

constexpr int32_t kMaxCtas = int32_t(kTwoLaunchCtas); // the workspace holds partials of this many CTAs
constexpr int64_t kClusterCtas = 8;                    // the largest portable cluster

int64_t elemBytes(DType dt) { return dt == DType::kFloat32 ? 4 : 2; }
int64_t vecOf(DType dt) { return 16 / elemBytes(dt); }
int64_t groupBytes(DType dt, const GroupNormShape& s) { return s.channels / s.groups * s.spatial * elemBytes(dt); }

// Elements between pixels channels-last (channels unless padded).
int64_t strideOf(const GroupNormShape& s) { return s.channelStride ? s.channelStride : s.channels; }

// The shape's derived sizes for a pack width.
struct Geometry {
    bool cl;
    // unitElems: staged elements per unit (channels-last: cs, or a window's channels)
    int64_t cs, units, segLen, unitElems, packs, rows, vec;
    int64_t windows;    // channels-last: windows of channels per range (1: none)
    int64_t width;      // statistics per segment: groups channels-last, else 1
    int64_t unitSmem;   // shared memory per staged unit (x and a full skip)
    int64_t align;      // units per CTA are a multiple of this
};

Geometry geometry(DType dt, const GroupNormShape& s, int64_t vec) {
    Geometry g{};
    g.cl = s.layout == GroupNormLayout::kChannelsLast;
    g.cs = g.cl ? strideOf(s) : s.channels;
    g.vec = vec;
    g.windows = 1;
    const int64_t skipCopies = s.skip == GroupNormSkip::kFull ? 2 : 1;
    if (g.cl) {
        g.units = s.n * s.spatial;
        g.segLen = s.spatial;
        g.unitElems = g.cs;
        g.packs = g.cs / vec;
        g.rows = g.packs ? kThreads / g.packs : 0;
        g.width = s.groups;
        g.align = 1;
    } else {
        g.units = s.n * s.channels * s.spatial;
        g.segLen = s.channels / s.groups * s.spatial;
        g.unitElems = 1;
        g.width = 1;
        g.align = vec;
    }
    g.unitSmem = g.unitElems * elemBytes(dt) * skipCopies;
    return g;
}

// The widest pack this shape can use (16 bytes when every row of packs stays inside a channel / pixel).
int64_t vecFor(DType dt, const GroupNormShape& s, bool aligned) {
    const int64_t v = vecOf(dt);
    const int64_t cs = strideOf(s);
    const bool fits = s.layout == GroupNormLayout::kChannelsLast ? cs % v == 0 : s.spatial % v == 0;
    return aligned && fits ? v : 1;
}

// The geometry a plan runs: its widest pack, or a narrow plan's 8-byte packs.
Geometry geometryOf(DType dt, const GroupNormShape& s, bool aligned, bool narrow) {
    return geometry(dt, s, narrow ? kNarrowVec : vecFor(dt, s, aligned));
}

// Whether a channels-last shape's channels can be cut into w windows of whole groups, each whole
// 16-byte packs (no pad: a window ends where the next begins).
bool windowsOk(DType dt, const GroupNormShape& s, bool aligned, int64_t w) {
    if (w == 1) return true;
    const int64_t cs = strideOf(s);
    return w > 1 && s.layout == GroupNormLayout::kChannelsLast && cs == s.channels && s.groups % w == 0 &&
           vecFor(dt, s, aligned) == vecOf(dt) && s.channels / w % vecOf(dt) == 0;
}

// The most windows (a window per group at most) that windowsOk, that keep samples x windows CTAs within
// the workspace's partials and a window's part of a pixel at least two 32-byte sectors.
int64_t windowsFor(DType dt, const GroupNormShape& s, bool aligned) {
    constexpr int64_t kMinWindowBytes = 64;
    for (int64_t w = s.groups; w > 1; --w)
        if (s.groups % w == 0 && s.n * w <= kMaxCtas && s.channels / w * elemBytes(dt) >= kMinWindowBytes &&
            windowsOk(dt, s, aligned, w))
            return w;
    return 1;
}

// The channel windows of plan p over geometry g's units: its CTAs per range (0: no plan).
int64_t windowsOf(const Geometry& g, const GroupNormResidentPlan& p) { return p.per >= 1 ? p.grid / ceilDiv(g.units, p.per) : 0; }

// Geometry g (channels-last, widest packs) with each pixel's channels cut into w windows.
Geometry windowed(const Geometry& g, int64_t w) {
    if (w == 1) return g;
    Geometry v = g;
    v.windows = w;
    v.unitElems = g.cs / w;
    v.packs = v.unitElems / v.vec;
    v.rows = kThreads / v.packs;
    v.width = g.width / w;
    v.unitSmem = g.unitSmem / w;
    return v;
}

bool shapeOk(const GroupNormShape& s) {
    if (s.n < 0 || s.channels < 1 || s.spatial < 0 || s.groups < 1 || s.channels % s.groups) return false;
    if (s.layout != GroupNormLayout::kChannelsFirst && s.layout != GroupNormLayout::kChannelsLast) return false;
    if (s.skip != GroupNormSkip::kNone && s.skip != GroupNormSkip::kFull && s.skip != GroupNormSkip::kPerChannel) return false;
    const int64_t cs = strideOf(s);
    if (s.layout == GroupNormLayout::kChannelsLast && cs < s.channels) return false;
    if (s.n > 0 && s.spatial > 0 && (cs > INT64_MAX / s.spatial / s.n)) return false;
    if (s.channels / s.groups * s.spatial >= kMaxOffset || cs >= kMaxOffset || s.spatial >= kMaxOffset) return false;
    if (s.n >= kMaxOffset / s.groups) return false; // segments (n x groups) < 2^31
    return true;
}

bool clThreadsOk(const Geometry& g) { return !g.cl || (g.packs >= 1 && g.packs <= kThreads); }

// Whether a shape can run narrow (GroupNormResidentPlan::narrow): 16-bit channels-last in 16-byte packs,
// a pixel's 8-byte packs within a CTA's threads.
bool narrowOk(DType dt, const GroupNormShape& s, bool aligned) {
    return s.layout == GroupNormLayout::kChannelsLast && elemBytes(dt) == 2 && vecFor(dt, s, aligned) == vecOf(dt) &&
           clThreadsOk(geometry(dt, s, kNarrowVec));
}

// Channels-last, units per CTA rounded up to a divisor of a sample's pixels (or a multiple of them),
// where that costs at most half as much again: no CTA's range then meets two samples (H100, run 3:
// such a range cost 8-10 us per launch at SD shapes with 2 or 8 samples). The divisors tried: the next
// 16 sizes, then the power of two above (launches plan their fallback each time: a bounded search).
int64_t sampleAligned(const Geometry& g, int64_t per) {
    if (!g.cl || g.units == g.segLen) return per;
    if (per >= g.segLen) {
        const int64_t m = ceilDiv(per, g.segLen) * g.segLen;
        return m <= per + per / 2 ? m : per;
    }
    const int64_t most = per + per / 2;
    for (int64_t d = per; d <= most && d <= per + 16; ++d)
        if (g.segLen % d == 0) return d;
    int64_t p2 = 1;
    while (p2 < per) p2 <<= 1;
    return p2 <= most && g.segLen % p2 == 0 ? p2 : per;
}

GroupNormResidentPlan split(const Geometry& g, int64_t grid, int64_t resident) {
    GroupNormResidentPlan p;
    const int64_t per = sampleAligned(g, ceilDiv(ceilDiv(g.units, grid), g.align) * g.align);
    p.per = per;
    p.grid = int32_t(ceilDiv(g.units, per));
    p.resident = resident < per ? resident : per;
    return p;
}

int64_t minUnits(const Geometry& g, DType dt) {
    const int64_t u = kMinUnitsBytes / (g.unitElems * elemBytes(dt));
    return u > g.align ? u : g.align;
}

// Segments a CTA's range of `per` units meets, at most.
int64_t maxPieces(const Geometry& g, int64_t per) { return ceilDiv(per, g.segLen) + 1; }

// Dynamic shared memory besides the staged units, for `per` units per CTA.
int64_t auxSmem(const Geometry& g, int64_t per) { return 4 * auxFloats(g.cl, g.rows, g.unitElems, maxPieces(g, per), g.width); }

// Dynamic shared memory of a plan.
size_t smemOf(const Geometry& g, const GroupNormResidentPlan& p) {
    const int64_t staged = (p.resident * g.unitElems + 7) / 8 * 8 * (g.unitSmem / g.unitElems);
    return size_t(staged + auxSmem(g, p.per));
}

// The geometry plan p runs, from the shape's widest-pack geometry g: 8-byte packs where narrow, else g cut
// into p's channel windows.
Geometry geometryOfPlan(const Geometry& g, DType dt, const GroupNormShape& s, bool aligned, const GroupNormResidentPlan& p) {
    return p.narrow ? geometryOf(dt, s, aligned, true) : windowed(g, windowsOf(g, p));
}

bool staged(const GroupNormResidentPlan& p) { return p.fused && p.resident >= p.per; }

// Whether every CTA of plan p holds whole segments (a CTA barrier between the phases serves).
bool local(const Geometry& g, const GroupNormResidentPlan& p) { return p.fused && g.segLen > 0 && p.per % g.segLen == 0; }

} // namespace
} // namespace trtp
