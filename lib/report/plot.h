// Plots with gnuplot: for each collective/dtype group, busbw vs size and time vs size (log2 x),
// one curve per series. The gnuplot script is kept beside the picture so it can be re-run.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "report/summary.h"

namespace fb {

struct PlotResult {
  bool made = false;                // at least one picture written
  std::string skipped;              // why nothing was plotted (gnuplot missing...), "" otherwise
  std::vector<std::string> errors;  // gnuplot failures, one line each
  std::vector<std::string> files;   // pictures written (paths)
};

// The gnuplot script for one group (exposed for tests). `kind` is "busbw" or "time". The legend
// sits outside the plot area; the busbw axis is logarithmic when the paths' peaks differ by more
// than 10x (wantsLogY); each path with a known nominal rate (rows' %nominal) gets a dashed line
// at that rate. With svgPath, the same plot is written as SVG too.
std::string gnuplotScript(const std::vector<const Series*>& group, const std::string& kind,
                          const std::string& terminal, const std::string& pngPath, const std::string& title,
                          const std::string& svgPath = "");
bool wantsLogY(const std::vector<const Series*>& group);
// The nominal link rate of a series (GB/s) from its rows' %nominal; -1 when unknown.
double nominalGBps(const Series& s);

// Writes outDir/plots/<groupId>_{busbw,time}.{png,svg,gp} (no .svg when !svg). Never throws for a
// missing gnuplot: the reason goes into `skipped`.
PlotResult writePlots(const std::vector<Series>& series, const std::string& outDir,
                      std::chrono::milliseconds timeoutPerPlot = std::chrono::milliseconds(60000), bool svg = true);

// A run folder's plots at the end of the run (fabricbench, rank 0): writePlots from its table.csv
// into <dir>/plots/ (PNG and the .gp script; the HTML report draws its own SVG), so the report.md
// written after them links them, within `budget` (gnuplot is stopped after it; a script it stopped
// runs once more alone, so twice `budget` at worst). "" when drawn (or no rows), else one line
// saying why none were (gnuplot missing, a failure) for the run's notes.
// The suite's line colours, in order (every plot: runs, HTML report, the model's projections).
const std::vector<std::string>& plotPalette();
std::string drawRunPlots(const std::string& dir, std::chrono::milliseconds budget);

}  // namespace fb
