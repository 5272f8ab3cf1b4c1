// fabricbench --accept: this node's error counters and link facts, from sysfs and procfs (the
// verdict compares them between units).
#pragma once
#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "app/options.h"

namespace fb::acceptcmd {

std::string readLine(const std::filesystem::path& p);
std::map<std::string, long long> readCounters();
nlohmann::json readFacts(const Options& o, const std::string& host);

}  // namespace fb::acceptcmd
