#include "op.h"

#include <atomic>

namespace trtp {

bool toKernelType(nvinfer1::DataType t, DType& out) noexcept {
    switch (t) {
    case nvinfer1::DataType::kFLOAT: out = DType::kFloat32; return true;
    case nvinfer1::DataType::kHALF: out = DType::kFloat16; return true;
    case nvinfer1::DataType::kBF16: out = DType::kBFloat16; return true;
    default: return false;
    }
}

bool toFormat(nvinfer1::TensorFormat f, Format& out) noexcept {
    switch (f) {
    case nvinfer1::TensorFormat::kLINEAR: out = Format::kLinear; return true;
    case nvinfer1::TensorFormat::kHWC: out = Format::kHWC; return true;
    case nvinfer1::TensorFormat::kHWC8: out = Format::kHWC8; return true;
    case nvinfer1::TensorFormat::kHWC16: out = Format::kHWC16; return true;
    case nvinfer1::TensorFormat::kDHWC: out = Format::kDHWC; return true;
    case nvinfer1::TensorFormat::kDHWC8: out = Format::kDHWC8; return true;
    default: return false;
    }
}

const char* typeName(nvinfer1::DataType t) noexcept {
    switch (t) {
    case nvinfer1::DataType::kFLOAT: return "FP32";
    case nvinfer1::DataType::kHALF: return "FP16";
    case nvinfer1::DataType::kBF16: return "BF16";
    case nvinfer1::DataType::kINT8: return "INT8";
    case nvinfer1::DataType::kINT32: return "INT32";
    case nvinfer1::DataType::kINT64: return "INT64";
    case nvinfer1::DataType::kBOOL: return "BOOL";
    default: return "another type";
    }
}

bool gpuSupported(const char* plugin) noexcept {
    const std::string problem = currentGpuProblem();
    if (problem.empty()) return true;
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) log(nvinfer1::ILogger::Severity::kERROR, "%s::supportsFormatCombination: %s", plugin, problem.c_str());
    return false;
}

} // namespace trtp
