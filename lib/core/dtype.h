// Element types measured by the suite. Host arithmetic for float16/bfloat16 goes through float.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fb {

enum class DataType { kFloat32, kFloat64, kInt32, kFloat16, kBFloat16 };

std::size_t dtypeSize(DataType t);
std::string_view dtypeName(DataType t);  // "float32", "float64", "int32", "float16", "bfloat16"
// Accepts the names above plus nccl-tests' short ones (float, double, int, half, bf16).
std::optional<DataType> parseDataType(std::string_view name);
std::vector<DataType> allDataTypes();

// IEEE binary16 and bfloat16 <-> float, round to nearest even.
std::uint16_t floatToHalf(float f);
float halfToFloat(std::uint16_t h);
std::uint16_t floatToBf16(float f);
float bf16ToFloat(std::uint16_t b);

// Element i of a buffer of type t, as double (host side), and the reverse.
double loadElement(const void* buf, DataType t, std::size_t i);
void storeElement(void* buf, DataType t, std::size_t i, double v);

}  // namespace fb
