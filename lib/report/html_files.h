// Parts of the one-page HTML report (html.cc): the sections read from files beside the runs
// (html_files.cc), and the text helpers both files use. Internal to lib/report.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/html.h"

namespace fb::html {

std::string esc(const std::string& s);                 // htmlEscape
std::string num(double v, int digits = 3);             // "—" for NaN or negative
std::string jsonText(const nlohmann::json& v);          // a string as is, "—" for null, else JSON
// fabricbench-model's projected/validation/training CSVs (files or folders in in.modelFiles).
std::string modelSection(const HtmlInputs& in, std::vector<std::string>& notes);
// acceptance.json files given and found in the run folders.
std::string acceptanceSection(const HtmlInputs& in, std::vector<std::string>& notes);

}  // namespace fb::html
