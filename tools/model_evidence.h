// Validation evidence of fabricbench-model (nccl validate's nccl-evidence.json, validate's evidence.json) and
// the error bands it gives projected rows. Evidence is the |error| of predicted (never fitted) points,
// kept per (algorithm, size regime), with what each cell covered: node counts, GPUs (ranks) per node,
// collectives and sizes. A projected row takes the band of its algorithm and regime (the cell's largest
// |error| over every collective) and says where it goes beyond what any validation covered.
// Files written before the coverage was recorded (no "gpus_per_node", "colls") are still read: their
// bands apply, and the header line says that GPUs per node and collectives are not checked against them.
#pragma once
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace fb::tools {

// Size regimes the evidence is kept by: latency-bound, the middle, bandwidth-bound.
std::string regimeOf(double bytes);

struct EvidenceBuilder {
  struct Cell {
    std::vector<double> err;
    std::map<std::string, std::vector<double>> byColl;
    std::set<int> nodes, gpus;
    std::set<std::string> impls;
    double minBytes = 0, maxBytes = 0;
  };
  std::map<std::pair<std::string, std::string>, Cell> cells;  // (algorithm, regime)
  std::vector<std::string> leftOut;                            // what was not taken as evidence, and why
  void add(const std::string& algo, const std::string& coll, double bytes, int nodes, int gpusPerNode, double absErrPct,
           const std::string& impl = "");
  // {"format": 2, "kind", "origin", "cells": [...]}; each cell keeps the keys of format 1 (algo, regime, points,
  // median_abs_err_pct, max_abs_err_pct, max_nodes, min_bytes, max_bytes) and adds min_nodes, nodes,
  // gpus_per_node and colls ({coll: {points, median_abs_err_pct, max_abs_err_pct}}).
  nlohmann::json toJson(const std::string& kind, const std::string& origin) const;
};

// Loaded evidence; empty() when none (--evidence none).
struct Evidence {
  nlohmann::json j;
  std::string source;        // where it came from, for the header line
  bool coverage = false;     // the file records GPUs per node and collectives (format 2)
  bool empty() const { return !j.is_object() || !j.contains("cells") || j["cells"].empty(); }
};
// Reads FILE (throws InputError naming `option` when it cannot be read, is not JSON or has no cells array).
Evidence readEvidence(const std::string& file, const std::string& option);
Evidence parseEvidence(const std::string& text, const std::string& source);

struct ErrorBand {
  double pct = -1;          // the largest |error| of the evidence cell; -1 = none (unvalidated)
  std::string beyond;       // why the projection is outside what validation covered; "" = inside
};
// The band of a projected row: its algorithm's cell at the row's size regime (the cell's max over every
// collective; `beyond` says when the row's collective is not among them).
ErrorBand bandOf(const Evidence& ev, const std::string& algo, const std::string& coll, double bytes, int nodes,
            int gpusPerNode);
// "±12 %" or "unvalidated" (rounded up); bandCsv: "11.3" or "" (one decimal, rounded up).
std::string bandText(const ErrorBand& b);
std::string bandCsv(const ErrorBand& b);

// The evidence of the repository's public validation, built in (results/model-nccl-validation-public/
// nccl-evidence.json at build time, tools/CMakeLists.txt), and its path in the repository.
const char* publicNcclEvidence();
const char* publicNcclEvidencePath();

}  // namespace fb::tools
