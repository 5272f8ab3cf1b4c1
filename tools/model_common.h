// fabricbench-model's shared pieces: output folders, number formats, option checks, loaded runs and
// their series, gnuplot, and one setup per subcommand (model_fit.cc, model_validate.cc,
// model_project.cc; nccl in model_nccl.cc). model_main.cc holds the subcommand table.
#pragma once
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "model/model.h"
#include "report/import.h"
#include "report/summary.h"

namespace fb::tools {

// Output folders this process created: removed again when the run ends in bad input, so a rejected
// command leaves no result folder behind.
void makeOutDir(const std::string& dir);
void removeCreated();

std::string human(double bytes);  // "1 MiB"
std::string us(double v);         // "12.34 us", "1.20 ms", "1.000 s"
std::string bw(double gbps);
std::string cell(std::string s);  // a Markdown table cell
std::string csvq(const std::string& f);

// Sizes as everywhere in the suite (fb::parseSize: K, M, G = 1024^k; KB/KiB the same as K).
double parseBytes(const std::string& t, const char* what);
// A numeric option given on the command line: finite and within [lo, hi] (open at lo when loOpen).
void checkRange(const char* opt, double v, double lo, bool loOpen, double hi = HUGE_VAL);
std::vector<int> parseIntList(const std::string& t, const char* what);
std::vector<std::string> splitComma(const std::string& t);
// KEY=NUMBER settings, comma-separated (eff=0.9,lat=5; nic=48,nics=8): each key one of `keys` and given once,
// each number decimal, finite and > 0, no empty item. `context` starts every error line ("--inter
// 'spec:ib-ndr,lat=-5'"); InputError (one line) on the first bad one.
std::vector<std::pair<std::string, double>> positiveSettings(const std::string& list, const std::string& context,
                                                             const std::vector<std::string>& keys);

struct Loaded {
  fb::RunData run;
  std::vector<fb::Series> series;
};
Loaded load(const std::string& arg);
std::string seriesName(const Loaded& l, const fb::Series& s);
// The series of `l` for collective `coll` (same dtype and placement when given) that matches pattern.
const fb::Series* findSeries(const Loaded& l, const std::string& pattern, const std::string& coll,
                             const std::string& dtype, bool inPlace);
std::string seriesList(const Loaded& l);
// A link source (project --inter/--intra, fit --intra): spec:NAME[,eff=X][,lat=US] (same link for every
// collective) or RUN[:SERIES], a measured run and a series pattern; [NAME=] in front names a fabric.
struct Source {
  std::string label, text;
  bool spec = false;
  fb::model::Link specLink;
  std::optional<Loaded> run;
  std::string pattern;
};
// Throws InputError (one line) for an unknown spec, a spec of the other kind, bad settings, a missing run.
Source parseSource(const std::string& arg, const char* what);
// The link for collective `coll`: the spec, or the fit of the run's series for coll (else its
// allreduce). An N x G series is fitted as its inter-node hop given `intra`, with fitNics NICs per
// node (without `intra` the fit's refusal is the error). Throws InputError when nothing matches, the
// fit is not usable, or the series ran on the wrong kind of link for `what` ("inter", "intra").
fb::model::Link resolve(const Source& s, const std::string& coll, const char* what,
                        const fb::model::Link* intra = nullptr, double fitNics = 1,
                        std::optional<fb::model::Algo> forceAlgo = std::nullopt);
// fit --intra: the run has a single-node series matching the pattern (else InputError, one line).
void checkIntraSource(const Source& s);
// A fit's segments in one line.
std::string segText(const std::vector<fb::model::Segment>& segs);

// gnuplot pictures under <out>/plots; skipped (and said why) without gnuplot or with --no-plots.
struct Plotter {
  std::string dir;
  bool enabled = true;
  bool have = false;
  std::string terminal = "png";
  std::vector<std::string> errors, files;
  std::string skipped;
  Plotter(const std::string& outDir, bool on);
  // Returns the png path relative to the report ("plots/x.png") or "" when not drawn.
  std::string draw(const std::string& name, const std::string& body);
};
std::string safeName(std::string s);

// Each subcommand: adds its options to the CLI11 subcommand, returns what runs it after parsing.
std::function<int()> setupFit(CLI::App& fit);
std::function<int()> setupValidate(CLI::App& val);
std::function<int()> setupProject(CLI::App& prj, const std::string& cmdLine);
std::function<int()> setupSpecs(CLI::App&);

}  // namespace fb::tools
