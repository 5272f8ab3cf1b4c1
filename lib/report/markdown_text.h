// Text helpers of the Markdown pages (report.md, the comparison page, the fingerprint section);
// private to lib/report.
#pragma once
#include <cstddef>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace fb::md {

// "64 MiB", "1000003 B": the largest binary unit that divides the size exactly.
inline std::string humanSize(std::size_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  std::size_t v = b;
  while (u < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{} {}", v, units[u]);
}

// Markdown table cells must not contain '|' or newlines.
inline std::string cell(std::string s) {
  std::string o;
  for (char c : s) {
    if (c == '|') o += "\\|";
    else if (c == '\n' || c == '\r') o += ' ';
    else o += c;
  }
  return o;
}

// A fingerprint value as text: "—" for null, strings unquoted.
inline std::string jsonText(const nlohmann::json& v) {
  if (v.is_null()) return "—";
  if (v.is_string()) return v.get<std::string>();
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace fb::md
