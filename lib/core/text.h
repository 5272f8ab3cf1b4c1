// Text helpers shared by every reader of logs, sysfs and command output (one copy each).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace fb::text {

// s without leading and trailing whitespace (space, tab, CR, LF, VT, FF).
std::string trim(std::string_view s);
// The parts of s between `sep`, each trimmed; empty parts dropped.
std::vector<std::string> split(std::string_view s, char sep);
// The parts of s between `sep`, each trimmed; empty parts kept (columns of a CSV or tab table).
std::vector<std::string> fields(std::string_view s, char sep);
// The lines of s without their '\n' or '\r\n' (a last line without one is kept; no empty last line).
std::vector<std::string> lines(std::string_view s);
bool startsWith(std::string_view s, std::string_view prefix);
// The whitespace-separated words of s (the whitespace trim drops); none for blank s.
std::vector<std::string> words(std::string_view s);
// The whole of s as a finite double (strtod: sign, exponent; leading whitespace accepted, trailing text, "inf",
// "nan" and "" refused). False when refused (v then holds strtod's answer).
bool toDouble(const std::string& s, double& v);
// The whole of s as decimal digits only: no sign, whitespace or K/M/G suffix (sizes with a suffix: fb::parseSize
// in core/units.h). False when empty, not all digits, or past SIZE_MAX.
bool toUnsigned(std::string_view s, std::size_t& v);
std::string join(const std::vector<std::string>& v, const std::string& sep);
// ASCII lower case.
std::string lower(std::string s);

}  // namespace fb::text
