// Versioned, length-checked, checksummed plugin blobs:
//   magic "TRTP" | u16 format | u16 reserved | u32 payload bytes | u32 FNV-1a(payload) | payload
// The payload starts with the plugin name. Every read is bounds-checked in
// all build types; a short, long or corrupted blob is rejected.
#pragma once
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <type_traits>
#include <vector>

#include "errors.h"
#include "fields.h"

namespace trtp {

constexpr uint32_t kBlobMagic = 0x50545254; // bytes "TRTP"
// Format 2 (written): the op's fields, as a creator takes them (Writer::fields). Format 1 (read):
// the op's values alone, in an order of its own (its declaration's kV1Layout).
constexpr uint16_t kBlobFormat = 2;
constexpr uint16_t kBlobFormatV1 = 1;
constexpr size_t kBlobHeader = 16;

// Fields read back from a blob, pointing into it (valid while the blob is).
struct BlobFields {
    BlobFields() = default;
    BlobFields(const BlobFields&) = delete; // the fields point into names
    BlobFields(BlobFields&&) = default;
    std::deque<std::string> names;
    std::vector<RawField> fields;
};

uint32_t fnv1a(const uint8_t* data, size_t n) noexcept;

class Writer {
public:
    explicit Writer(const char* plugin) { string(plugin); }

    template <class T>
    void pod(const T& v) {
        static_assert(std::is_trivially_copyable<T>::value, "pod only");
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        mPayload.insert(mPayload.end(), p, p + sizeof(T));
    }
    void string(const std::string& s) {
        pod(static_cast<uint32_t>(s.size()));
        mPayload.insert(mPayload.end(), s.begin(), s.end());
    }
    void floats(const std::vector<float>& v) {
        pod(static_cast<uint32_t>(v.size()));
        const auto* p = reinterpret_cast<const uint8_t*>(v.data());
        mPayload.insert(mPayload.end(), p, p + v.size() * sizeof(float));
    }

    // u32 count; per field: name, i32 type, i32 length, u32 byte count, the bytes.
    void fields(const std::vector<RawField>& fields);

    size_t size() const noexcept { return kBlobHeader + mPayload.size(); }
    void copyTo(void* buffer) const noexcept;

private:
    std::vector<uint8_t> mPayload;
};

class Reader {
public:
    // Validates the header, the length and the checksum, then the plugin name.
    Reader(const void* data, size_t length, const char* plugin);

    template <class T>
    T pod() {
        static_assert(std::is_trivially_copyable<T>::value, "pod only");
        T v;
        std::memcpy(&v, take(sizeof(T)), sizeof(T));
        return v;
    }
    std::string string();
    std::vector<float> floats();
    BlobFields fields(); // what Writer::fields wrote
    uint16_t format() const noexcept { return mFormat; }
    // Throws unless every byte was consumed.
    void finish() const;

private:
    const uint8_t* take(size_t n);
    const uint8_t* mData;
    size_t mSize;
    size_t mPos = 0;
    uint16_t mFormat = kBlobFormat;
};

} // namespace trtp
