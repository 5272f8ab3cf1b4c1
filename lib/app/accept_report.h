// fabricbench --accept, the report's pieces: numbers, heatmaps (gnuplot) and markdown matrices.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "accept/accept.h"

namespace fb::acceptcmd {

std::string fmtNum(double x, const char* spec = "{:.3g}");
void writeText(const std::filesystem::path& p, const std::string& text);
// gnuplot heatmap (PNG + SVG) of one matrix; "" when drawn, else why not.
std::string heatmap(const std::filesystem::path& dir, const std::string& stem, const std::string& title, const accept::PairMatrix& m,
                    const std::vector<double>& v, const std::string& unit);
// A markdown matrix (values), for the report without pictures.
std::string mdMatrix(const accept::PairMatrix& m, const std::vector<double>& v);

}  // namespace fb::acceptcmd
