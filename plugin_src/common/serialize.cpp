#include "serialize.h"

namespace trtp {

uint32_t fnv1a(const uint8_t* data, size_t n) noexcept {
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; ++i) h = (h ^ data[i]) * 16777619u;
    return h;
}

namespace {
template <class T>
void put(uint8_t*& p, T v) {
    std::memcpy(p, &v, sizeof v);
    p += sizeof v;
}
template <class T>
T get(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
} // namespace

void Writer::copyTo(void* buffer) const noexcept {
    auto* p = static_cast<uint8_t*>(buffer);
    put(p, kBlobMagic);
    put(p, kBlobFormat);
    put(p, uint16_t{0});
    put(p, static_cast<uint32_t>(mPayload.size()));
    put(p, fnv1a(mPayload.data(), mPayload.size()));
    std::memcpy(p, mPayload.data(), mPayload.size());
}

Reader::Reader(const void* data, size_t length, const char* plugin) {
    if (!data) fail("null serialized data");
    if (length < kBlobHeader) fail("serialized data truncated (%zu bytes, header needs %zu)", length, kBlobHeader);
    const auto* bytes = static_cast<const uint8_t*>(data);
    if (get<uint32_t>(bytes) != kBlobMagic) fail("serialized data is not a trtplugins blob (bad magic)");
    mFormat = get<uint16_t>(bytes + 4);
    if (mFormat != kBlobFormat && mFormat != kBlobFormatV1)
        fail("unsupported blob format %u (this library reads %u and %u)", mFormat, kBlobFormatV1, kBlobFormat);
    if (get<uint16_t>(bytes + 6) != 0) fail("serialized data has a bad header (reserved bits set)");
    uint32_t payload = get<uint32_t>(bytes + 8);
    if (payload != length - kBlobHeader)
        fail("serialized data has %zu payload bytes, header says %u (truncated or padded)", length - kBlobHeader, payload);
    mData = bytes + kBlobHeader;
    mSize = payload;
    if (fnv1a(mData, mSize) != get<uint32_t>(bytes + 12)) fail("serialized data is corrupted (checksum mismatch)");
    std::string name = string();
    if (name != plugin) fail("serialized data belongs to plugin '%s'", name.c_str());
}

const uint8_t* Reader::take(size_t n) {
    if (n > mSize - mPos) fail("serialized data truncated");
    const uint8_t* p = mData + mPos;
    mPos += n;
    return p;
}

std::string Reader::string() {
    uint32_t n = pod<uint32_t>();
    const uint8_t* p = take(n);
    return std::string(reinterpret_cast<const char*>(p), n);
}

std::vector<float> Reader::floats() {
    uint32_t n = pod<uint32_t>();
    if (n > (mSize - mPos) / sizeof(float)) fail("serialized data truncated");
    std::vector<float> v(n);
    std::memcpy(v.data(), take(n * sizeof(float)), n * sizeof(float));
    return v;
}

void Writer::fields(const std::vector<RawField>& fields) {
    pod(static_cast<uint32_t>(fields.size()));
    for (const auto& f : fields) {
        const size_t bytes = static_cast<size_t>(f.length) * fieldTypeBytes(f.type);
        string(f.name);
        pod(static_cast<int32_t>(f.type));
        pod(f.length);
        pod(static_cast<uint32_t>(bytes));
        const auto* p = static_cast<const uint8_t*>(f.data);
        mPayload.insert(mPayload.end(), p, p + bytes);
    }
}

BlobFields Reader::fields() {
    BlobFields out;
    const auto n = pod<uint32_t>();
    for (uint32_t i = 0; i < n; ++i) {
        out.names.push_back(string());
        const auto type = static_cast<FieldType>(pod<int32_t>());
        const auto length = pod<int32_t>();
        const auto bytes = pod<uint32_t>();
        if (length < 0 || bytes != static_cast<size_t>(length) * fieldTypeBytes(type))
            fail("serialized field '%s' has %u bytes for %d values", out.names.back().c_str(), bytes, length);
        out.fields.push_back({out.names.back().c_str(), take(bytes), type, length});
    }
    return out;
}

void Reader::finish() const {
    if (mPos != mSize) fail("%zu unread bytes at the end of serialized data", mSize - mPos);
}

} // namespace trtp
