// fabricbench-model project (projected, costed rows on N nodes x G ranks) and specs (the link table).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/units.h"
#include "model/nccl.h"
#include "model/model.h"
#include "model_common.h"
#include "model_evidence.h"
#include "report/import.h"
#include "report/process.h"
#include "report/result_sink.h"
#include "report/summary.h"

namespace fs = std::filesystem;
using namespace fb::model;
using fb::Series;

namespace fb::tools {

// ---- project -----------------------------------------------------------------------------------

struct ProjectArgs {
  std::vector<std::string> inter;
  std::string intra;
  std::string nodes = "1,2,4,8,16,32,64,128,256,512,1024", gpus = "1", colls = "allreduce,allgather,reducescatter,p2pring";
  std::string sizes = "1M,16M,256M,1G";
  double nics = 0;
  double fitNics = 1;  // NICs per node of a measured N x G --inter run
  std::string algo;
  // training
  double params = 0;
  std::string gradDtype = "bf16";
  int tp = 1;
  std::string bucket = "25MB";
  double computeMs = -1, overlap = 0;
  std::string prices;
  std::string trainNodes;
  std::string out;
  std::string evidence;  // validate's evidence.json; "" or "none": no bands, every row marked unvalidated
  bool noPlots = false;
};

double dtypeBytes(const std::string& d) {
  if (d == "bf16" || d == "fp16" || d == "float16" || d == "bfloat16") return 2;
  if (d == "fp32" || d == "float32") return 4;
  if (d == "fp8") return 1;
  throw InputError(fmt::format("--grad-dtype '{}': bf16, fp16, fp32 or fp8", d));
}

int cmdProject(const ProjectArgs& a, const std::string& cmdLine) {
  if (a.inter.empty() && a.intra.empty()) throw InputError("project needs --inter SRC (repeatable) and/or --intra SRC");
  auto nodes = parseIntList(a.nodes, "--nodes");
  auto gpus = parseIntList(a.gpus, "--gpus");
  if (a.nics < 0) throw InputError("--nics must be >= 0");
  std::vector<double> sizes;
  for (auto& s : splitComma(a.sizes)) sizes.push_back(parseBytes(s, "--sizes"));
  auto colls = splitComma(a.colls);
  for (auto& c : colls) {
    std::string known;
    for (auto k : fb::allCollKinds()) known += (known.empty() ? "" : ", ") + std::string(fb::collName(k));
    if (!fb::parseCollKind(c)) throw InputError(fmt::format("--coll '{}': {}", c, known));
  }
  std::optional<Algo> force;
  if (!a.algo.empty()) force = parseAlgo(a.algo);
  std::vector<Source> fabrics;
  for (auto& i : a.inter) fabrics.push_back(parseSource(i, "inter"));
  std::optional<Source> intraSrc;
  if (!a.intra.empty()) intraSrc = parseSource(a.intra, "intra");
  if (fabrics.empty()) {  // intra-node only: one "fabric" = the node itself
    Source s;
    s.label = "single node";
    fabrics.push_back(s);
    for (int n : nodes)
      if (n != 1) throw InputError("--nodes > 1 needs an --inter link");
  }
  std::set<std::string> labels;
  for (auto& f : fabrics)
    if (!labels.insert(f.label).second) throw InputError(fmt::format("two fabrics named '{}': name them NAME=SRC", f.label));
  for (int g : gpus)
    if (g > 1 && !intraSrc) throw InputError(fmt::format("--gpus {} needs an --intra link (spec:nvlink4-h100, RUN:SERIES)", g));
  std::map<std::string, FabricPrice> prices;
  if (!a.prices.empty()) {
    prices = loadPrices(a.prices);
    for (auto& f : fabrics)
      if (!prices.count(f.label))
        throw InputError(fmt::format("price file {} has no fabric '{}' (name fabrics NAME=SRC to match its entries)",
                                     a.prices, f.label));
  }
  bool training = a.params > 0;
  TrainModel tm;
  if (training) {
    tm.params = a.params;
    tm.gradDtype = a.gradDtype;
    tm.gradBytesPerParam = dtypeBytes(a.gradDtype);
    tm.tp = a.tp;
    tm.bucketBytes = parseBytes(a.bucket, "--bucket");
    if (a.computeMs < 0) throw InputError("--params needs --compute-ms (compute time per step, user input)");
    tm.computeMs = a.computeMs;
    tm.overlap = a.overlap;
  }
  Evidence ev;
  if (!a.evidence.empty() && a.evidence != "none") {
    ev = readEvidence(a.evidence, "--evidence");
    if (ev.j.value("kind", std::string()) != "generic")
      throw InputError(fmt::format("--evidence {}: not the evidence.json of `fabricbench-model validate` (nccl validate's "
                                   "nccl-evidence.json goes to `nccl project --evidence`)",
                                   a.evidence));
  }
  makeOutDir(a.out);
  Plotter pl(a.out, !a.noPlots);

  std::string md = "# fabricbench-model: PROJECTED collective times\n\n";
  md += "**Everything on this page is projected** (a model output, not a measurement): measured curves were fitted "
        "to per-hop latency and bandwidth and carried to other node counts with the algorithm formulas in "
        "lib/model/model.h; spec inputs are nominal line rate x efficiency, and their defaults are marked as such: "
        "replace them with a measurement.\n\n";
  md += fmt::format("Command: `{}`\n\n", cmdLine);
  if (ev.empty())
    md += "**No error bands**: no validation evidence was given, so every projected row below is marked "
          "**unvalidated**. Run `fabricbench-model validate --inter RUN --intra RUN --check RUN... -o DIR` on measured "
          "runs of the fabric and pass `--evidence DIR/evidence.json`.\n\n";
  else
    md += fmt::format("Error bands: the largest |error| that validation ({}: {}) saw for the same algorithm and size "
                      "regime (< 1 MiB, 1-64 MiB, >= 64 MiB), over every collective validated there; "
                      "'beyond validation' says where a row goes past the node counts, ranks per node, collectives, "
                      "sizes or algorithms any validation covered.\n\n",
                      a.evidence, ev.j.value("origin", std::string("?")));
  md += "## Inputs\n\n| fabric | link | measured or spec | source | fitted / assumed per-hop figures | notes |\n|---|---|---|---|---|---|\n";
  std::optional<Link> intraAll;
  if (intraSrc && intraSrc->spec) intraAll = intraSrc->specLink;
  auto inputsFor = [&](const Source& f, const std::string& coll) {
    Inputs in;
    if (intraSrc) in.intra = resolve(*intraSrc, coll, "intra");
    if (f.spec || f.run) in.inter = resolve(f, coll, "inter", in.intra ? &*in.intra : nullptr, a.fitNics);
    return in;
  };
  for (auto& f : fabrics) {
    Inputs in = inputsFor(f, colls[0]);
    if (in.intra)
      md += fmt::format("| {} | intra-node | {} | {} | {} | {} |\n", cell(f.label), in.intra->measured ? "measured" : "spec",
                        cell(in.intra->source), segText(in.intra->segs), cell(in.intra->notes));
    if (in.inter)
      md += fmt::format("| {} | inter-node | {} | {} | {} | {} |\n", cell(f.label), in.inter->measured ? "measured" : "spec",
                        cell(in.inter->source), segText(in.inter->segs), cell(in.inter->notes));
  }
  md += fmt::format("\nMeasured inputs are fitted per collective ({} shown; the CSV names the series used for each row). "
                    "NICs per node: {}.\n\n",
                    colls[0], a.nics > 0 ? fmt::format("{}", a.nics) : std::string("one per rank (rails)"));

  std::string csv =
      "kind,fabric,coll,nodes,ranks_per_node,nics_per_node,ranks,size_bytes,algo,time_us,algbw_GBps,busbw_GBps,"
      "candidates,intra_input,intra_measured,inter_input,inter_measured,band_pct,beyond_validation\n";
  // coll -> fabric -> rows, each with its error band (computed once, for the CSV and the page)
  struct Row {
    Projection p;
    ErrorBand band;
  };
  std::map<std::string, std::map<std::string, std::vector<Row>>> rows;
  // A measured link is carried outside the sizes it was fitted on by its lowest or highest segment: said
  // beside the validation's coverage.
  auto outsideFit = [](const Inputs& in, const Shape& sh, std::initializer_list<double> sizes, ErrorBand& b) {
    auto one = [&](const std::optional<Link>& l, bool used, const char* which) {
      if (!used || !l || !l->measured || l->segs.empty()) return;
      const double lo = static_cast<double>(l->segs.front().lo), hi = static_cast<double>(l->segs.back().hi);
      if (std::any_of(sizes.begin(), sizes.end(), [&](double S) { return S < lo || S > hi; }))
        b.beyond += fmt::format("{}size outside the {} link's fitted {}..{}", b.beyond.empty() ? "" : "; ", which,
                                human(lo), human(hi));
    };
    one(in.intra, sh.perNode > 1, "intra-node");
    one(in.inter, sh.nodes > 1, "inter-node");
  };
  for (auto& coll : colls)
    for (auto& f : fabrics) {
      Inputs in = inputsFor(f, coll);
      for (int g : gpus)
        for (int n : nodes)
          for (double S : sizes) {
            Shape sh{n, g, a.nics};
            if (sh.ranks() < 2) continue;
            Projection p = project(coll, sh, S, in, force);
            ErrorBand b = bandOf(ev, algoName(p.algo), coll, S, n, g);
            outsideFit(in, sh, {S}, b);
            rows[coll][f.label].push_back({p, b});
            std::string cand;
            for (auto& [al, t] : p.candidates) cand += fmt::format("{}{}={:.3f}", cand.empty() ? "" : ";", algoName(al), t);
            bool useIntra = g > 1, useInter = n > 1;
            csv += fmt::format("projected,{},{},{},{},{},{},{:.0f},{},{:.3f},{:.6g},{:.6g},{},{},{},{},{},{},{}\n", csvq(f.label),
                               coll, n, g, sh.nics(), sh.ranks(), S, algoName(p.algo), p.timeUs, p.algbwGBps, p.busbwGBps,
                               csvq(cand), csvq(useIntra && in.intra ? in.intra->source : ""),
                               useIntra && in.intra ? (in.intra->measured ? "measured" : "spec") : "unused",
                               csvq(useInter && in.inter ? in.inter->source : ""),
                               useInter && in.inter ? (in.inter->measured ? "measured" : "spec") : "unused",
                               bandCsv(b), csvq(b.beyond));
          }
    }
  for (auto& coll : colls) {
    md += fmt::format("## {} (projected)\n\n", coll);
    md += "| fabric | nodes x ranks/node | size | chosen algorithm | time | band | busbw per rank (GB/s) | every candidate | "
          "beyond validation |\n|---|---|---:|---|---:|---:|---:|---|---|\n";
    for (auto& [fab, rs] : rows[coll])
      for (auto& [p, b] : rs) {
        std::string cand;
        for (auto& [al, t] : p.candidates) cand += fmt::format("{}{} {}", cand.empty() ? "" : ", ", algoName(al), us(t));
        md += fmt::format("| {} | {} x {} | {} | {} | {} | {} | {} | {} | {} |\n", cell(fab), p.shape.nodes, p.shape.perNode,
                          human(p.bytes), algoName(p.algo), us(p.timeUs), bandText(b), bw(p.busbwGBps), cand,
                          b.beyond.empty() ? "-" : cell(b.beyond));
      }
    md += "\n";
    // plot: time vs nodes per fabric at each size (first G)
    std::string body = fmt::format(
        "set title '{} PROJECTED time vs node count ({} ranks per node)'\nset logscale x 2\nset logscale y 10\nset xlabel 'nodes'\n"
        "set ylabel 'time per operation (us, projected)'\nset key below\nset grid\n",
        coll, gpus[0]);
    std::string plots;
    int blk = 0;
    std::set<int> plotted;  // the node counts drawn: the x axis spans them and ticks at each
    for (auto& [fab, rs] : rows[coll])
      for (double S : sizes) {
        std::string data;
        for (auto& [p, b] : rs)
          if (p.bytes == S && p.shape.perNode == gpus[0]) {
            data += fmt::format("{} {}\n", p.shape.nodes, p.timeUs);
            plotted.insert(p.shape.nodes);
          }
        if (data.empty()) continue;
        body += fmt::format("$d{} << EOD\n{}EOD\n", blk, data);
        plots += fmt::format("{}$d{} using 1:2 with linespoints title '{} {}'", plots.empty() ? "" : ", ", blk, fab, human(S));
        ++blk;
      }
    if (!plotted.empty()) {
      std::string tics;
      for (int n : plotted) tics += fmt::format("{}\"{}\" {}", tics.empty() ? "" : ", ", n, n);
      body += fmt::format("set xrange [{}:{}]\nset xtics ({})\n", *plotted.begin() / 1.15, *plotted.rbegin() * 1.15, tics);
    }
    if (!plots.empty() && nodes.size() > 1) {
      auto png = pl.draw(safeName("projected_" + coll + "_time_vs_nodes"), body + "plot " + plots + "\n");
      if (!png.empty()) md += fmt::format("![{} projected]({})\n\n", coll, png);
    }
  }

  // Training step and cost.
  if (training || !prices.empty()) {
    md += "## Training step (projected)\n\n";
    if (training) {
      md += fmt::format(
          "Assumptions (user input, printed beside every number): {:.4g} parameters, {} gradients ({} B each), "
          "tensor parallel {} inside the node, data parallel over the rest, gradient buckets of {} (one AllReduce "
          "each, back to back), compute {:.1f} ms per step, {:.0f}% of communication overlapped with compute. "
          "Exposed communication = communication x (1 - overlap); step = compute + exposed.\n\n",
          tm.params, tm.gradDtype, tm.gradBytesPerParam, tm.tp, human(tm.bucketBytes), tm.computeMs, tm.overlap * 100);
    }
    md += "| fabric | nodes x GPUs/node | DP group (nodes x ranks/node, NICs) | gradient per rank | buckets | AllReduce "
          "algorithm | communication | exposed | step | step vs first fabric | band (AllReduce of a bucket) |";
    if (!prices.empty())
      md += " cost total | per node | cost includes | topology | $ per GB/s of busbw (1 GiB AllReduce) | steps/hour per $1M |";
    md += "\n|---|---|---|---:|---:|---|---:|---:|---:|---:|---|";
    if (!prices.empty()) md += "---:|---:|---|---|---:|---:|";
    md += "\n";
    std::map<std::pair<int, int>, double> firstStep;
    std::string tcsv = "kind,fabric,nodes,gpus_per_node,tp,params,grad_dtype,bucket_bytes,compute_ms,overlap,buckets,algo,"
                       "comm_ms,exposed_ms,step_ms,cost_total_usd,cost_per_node_usd,usd_per_GBps_busbw,cost_includes,inputs,comm_band_pct,"
                       "beyond_validation\n";
    auto tnodes = a.trainNodes.empty() ? nodes : parseIntList(a.trainNodes, "--train-nodes");
    for (auto& f : fabrics) {
      Inputs in = inputsFor(f, "allreduce");
      for (int g : gpus)
        for (int n : tnodes) {
          Shape sh{n, g, a.nics};
          StepEstimate e;
          bool haveStep = training && sh.ranks() / tm.tp > 0;
          if (training) e = trainingStep(tm, sh, in);
          auto key = std::make_pair(n, g);
          if (training && !firstStep.count(key)) firstStep[key] = e.stepMs;
          std::string costCols;
          double costTotal = 0, perNode = 0, usdPerGBps = 0;
          std::string costIncludes;
          if (!prices.empty()) {
            auto c = fabricCost(prices.at(f.label), n, g);
            costTotal = c.totalUsd;
            costIncludes = c.includes;
            perNode = c.perNodeUsd;
            double busbw = sh.ranks() > 1 ? project("allreduce", sh, 1073741824.0, in, force).busbwGBps : 0;
            double fabricUsd = c.nicUsd + c.switchUsd + c.cableUsd + c.opticsUsd;
            usdPerGBps = busbw > 0 ? fabricUsd / (busbw * sh.ranks()) : 0;
            double stepsPerHourPerM = training && e.stepMs > 0 ? 3.6e6 / e.stepMs / (c.totalUsd / 1e6) : 0;
            costCols = fmt::format(" ${:.0f} | ${:.0f} | {} | {} ({} leaf, {} spine{}, {} cables) | {} | {} |", c.totalUsd,
                                   c.perNodeUsd, cell(c.includes), c.topology, c.leaves, c.spines,
                                   c.cores ? fmt::format(", {} core", c.cores) : "", c.cables,
                                   usdPerGBps > 0 ? fmt::format("${:.0f}", usdPerGBps) : "—",
                                   stepsPerHourPerM > 0 ? fmt::format("{:.1f}", stepsPerHourPerM) : "—");
          }
          // The step's band: the communication's (the bucket AllReduce's algorithm and regime on the DP group),
          // carried to the step through the exposed share.
          ErrorBand sb;
          if (training && haveStep && e.dpShape.ranks() > 1) {
            sb = bandOf(ev, algoName(e.algo), "allreduce", tm.bucketBytes, e.dpShape.nodes, e.dpShape.perNode);
            // The sizes the step projects: a full bucket (the gradient when smaller) and the last one.
            outsideFit(in, e.dpShape, {std::min(tm.bucketBytes, e.gradBytesPerRank), e.lastBucketBytes}, sb);
          }
          if (training && haveStep) {
            std::string stepBand = "—";
            if (e.dpShape.ranks() > 1) {
              const auto& b = sb;
              stepBand = b.pct >= 0 ? fmt::format("communication {}, step ±{}", bandText(b),
                                                  us(e.exposedMs * 1e3 * b.pct / 100))
                                    : "unvalidated";
              if (!b.beyond.empty()) stepBand += "; beyond validation: " + b.beyond;
            }
            md += fmt::format("| {} | {} x {} | {} x {}, {:.3g} NICs | {} | {} | {} | {} | {} | {} | {:.3f} | {} |{}\n",
                              cell(f.label), n, g, e.dpShape.nodes, e.dpShape.perNode, e.dpShape.nics(),
                              human(e.gradBytesPerRank), e.buckets, algoName(e.algo), us(e.commMs * 1e3),
                              us(e.exposedMs * 1e3), us(e.stepMs * 1e3), e.stepMs / firstStep[key], cell(stepBand), costCols);
          } else {
            md += fmt::format("| {} | {} x {} | — | — | — | — | — | — | — | — | — |{}\n", cell(f.label), n, g, costCols);
          }
          tcsv += fmt::format("projected,{},{},{},{},{},{},{},{},{},{},{},{:.4f},{:.4f},{:.4f},{:.2f},{:.2f},{:.4f},{},{},{},{}\n",
                              csvq(f.label), n, g, tm.tp, tm.params, tm.gradDtype, tm.bucketBytes, tm.computeMs,
                              tm.overlap, e.buckets, algoName(e.algo), e.commMs, e.exposedMs, e.stepMs, costTotal,
                              perNode, usdPerGBps, csvq(costIncludes),
                              csvq((in.inter ? "inter: " + in.inter->source : "") +
                                   (in.intra ? "; intra: " + in.intra->source : "")),
                              bandCsv(sb), csvq(sb.beyond));
        }
    }
    md += "\n";
    if (!prices.empty()) {
      md += "Prices are **user input** from " + a.prices +
            " (every entry says so); $ per GB/s = fabric cost (NICs, switches, cables, optics) / (projected per-rank AllReduce busbw at 1 GiB x ranks); "
            "steps/hour per $1M = projected steps per hour / (cost total / $1M). The cost total is the whole cluster's "
            "(NICs, switches, cables, optics, GPUs, nodes) only where the price file gives per_gpu_usd or per_node_usd; "
            "otherwise it is the fabric's alone, and the 'cost includes' column says which.\n\n";
      for (auto& [n, p] : prices)
        if (!p.note.empty()) md += fmt::format("- {}: {}\n", n, p.note);
      md += "\n";
    }
    fb::writeFileAtomic((fs::path(a.out) / "training.csv").string(), tcsv);
  }
  md += "## Link specs shipped with the tool\n\n| name | kind | line rate | GB/s per direction | efficiency (default) | "
        "per-hop latency (default) | line-rate source | where the defaults come from |\n|---|---|---|---:|---:|---:|---|---|\n";
  for (auto& s : specTable())
    md += fmt::format("| {} | {} | {} | {} | {:.2f} | {:.1f} us | {} | {} |\n", s.name, s.kind, s.rateText, s.lineGbps,
                      s.efficiency, s.latencyUs, cell(s.source), cell(s.defaultsSource));
  fb::writeFileAtomic((fs::path(a.out) / "projection.md").string(), md);
  fb::writeFileAtomic((fs::path(a.out) / "projected.csv").string(), csv);
  std::printf("%s", md.substr(0, md.find("## Link specs")).c_str());
  std::printf("wrote %s/projection.md, %s/projected.csv%s\n", a.out.c_str(), a.out.c_str(),
              training || !prices.empty() ? (", " + a.out + "/training.csv").c_str() : "");
  if (!pl.skipped.empty()) std::printf("plots skipped: %s\n", pl.skipped.c_str());
  for (auto& e : pl.errors) std::fprintf(stderr, "fabricbench-model: plot failed: %s\n", e.c_str());
  return pl.errors.empty() ? 0 : 1;
}

// One row per subcommand: name, help, and a setup that adds its options to the CLI11 subcommand and
// returns what runs it after parsing. A new subcommand (e.g. `nccl`, in its own file) is one row here.

std::function<int()> setupProject(CLI::App& prj, const std::string& cmdLine) {
  auto pp = std::make_shared<ProjectArgs>();
  ProjectArgs& pa = *pp;
  prj.add_option("--inter", pa.inter,
                 "inter-node link per fabric (repeatable): [NAME=]spec:ib-hdr[,eff=X][,lat=US] or [NAME=]RUN:SERIES "
                 "(one rank per node, or N x G fitted given --intra and --fit-nics)");
  prj.add_option("--intra", pa.intra, "intra-node link: spec:nvlink4-h100 or RUN:SERIES (single-node run); also the "
                 "intra-node part taken off an N x G --inter run's fit");
  prj.add_option("--nodes", pa.nodes, "node counts N (default 1,2,4,...,1024)");
  prj.add_option("--gpus", pa.gpus, "ranks (GPUs) per node G, a list (default 1)");
  prj.add_option("--nics", pa.nics, "NICs per node (default: one per rank, rails)");
  prj.add_option("--fit-nics", pa.fitNics,
                 "NICs per node of a measured N x G --inter run, whose inter-node hop is fitted given --intra "
                 "(default 1: the node's ranks share one interface, as with the tcp backend)");
  prj.add_option("--coll", pa.colls, "collectives (default allreduce,allgather,reducescatter,p2pring; also alltoall, broadcast)");
  prj.add_option("--sizes", pa.sizes, "message sizes (default 1M,16M,256M,1G; K/M/G = KB/MB/GB = 1024^k, as in fabricbench)");
  prj.add_option("--algo", pa.algo, "only this algorithm (default: the fastest of ring, tree, hier per size)");
  prj.add_option("--params", pa.params, "training: parameter count (e.g. 100e9)");
  prj.add_option("--grad-dtype", pa.gradDtype, "training: gradient dtype bf16|fp16|fp32|fp8 (default bf16)");
  prj.add_option("--tp", pa.tp, "training: tensor-parallel degree inside the node (default 1)");
  prj.add_option("--bucket", pa.bucket, "training: gradient bucket size (default 25M = 25 MiB, PyTorch DDP's bucket_cap_mb)");
  prj.add_option("--compute-ms", pa.computeMs, "training: compute time per step in ms (user input)");
  prj.add_option("--overlap", pa.overlap, "training: fraction of communication hidden behind compute, 0..1 (default 0)");
  prj.add_option("--train-nodes", pa.trainNodes, "node counts for the training-step and cost table (default: --nodes)");
  prj.add_option("--prices", pa.prices, "JSON price file per fabric (see tools/prices-example.json)");
  prj.add_option("-o,--out", pa.out, "output folder for projection.md, projected.csv, plots")->required();
  prj.add_option("--evidence", pa.evidence, "evidence.json from `fabricbench-model validate -o DIR`: each row's error band "
                 "(default none: every row marked unvalidated)");
  prj.add_flag("--no-plots", pa.noPlots, "do not run gnuplot");
  CLI::App* app = &prj;
  return [pp, app, cmdLine] {
    const ProjectArgs& pa = *pp;
    auto given = [&](const char* o) { return app->get_option(o)->count() > 0; };
    if (given("--nics")) checkRange("--nics", pa.nics, 0, true);
    checkRange("--fit-nics", pa.fitNics, 0, true);
    if (given("--fit-nics") && pa.intra.empty())
      throw InputError("--fit-nics is the NICs of an N x G --inter run, fitted given --intra: give --intra SRC, or "
                       "leave --fit-nics out");
    if (given("--params")) checkRange("--params", pa.params, 0, true);
    if (given("--compute-ms")) checkRange("--compute-ms", pa.computeMs, 0, false);
    checkRange("--overlap", pa.overlap, 0, false, 1);
    if (pa.tp < 1) throw InputError(fmt::format("--tp = {}: must be >= 1", pa.tp));
    return cmdProject(pa, cmdLine);
  };
}

std::function<int()> setupSpecs(CLI::App&) {
  return [] {
    for (auto& s : specTable())
      std::printf("%-14s %-5s %-32s %8.2f GB/s  eff %.2f (default)  %5.1f us/hop (default)\n    rate: %s\n    defaults: %s\n",
                  s.name.c_str(), s.kind.c_str(), s.rateText.c_str(), s.lineGbps, s.efficiency, s.latencyUs,
                  s.source.c_str(), s.defaultsSource.c_str());
    // The priors of `fabricbench-model nccl` (lib/model/nccl.h), defaults until a fit moves them.
    std::printf(
        "\nfabricbench-model nccl priors (defaults; a fit replaces those its runs identify):\n"
        "  per-NIC 48 GB/s (--nic-gbps): 46-48 GB/s per NDR NIC (NVIDIA/nccl-tests issues 290, 267)\n"
        "  NIC line 50 GB/s (--nic-line-gbps): InfiniBand NDR 4x, 400 Gb/s\n"
        "  node ring 365 GB/s (--ring-gbps): 8 x H100 NCCL_ALGO=Ring 365-370 GB/s (NVIDIA/nccl issue 1455;\n"
        "    ~370 in nccl-tests issue 212; NCCL's 18 x 20.6 GB/s, src/graph/topo.h SM90_NVLINK_BW)\n"
        "  NVLS 480 GB/s (--nvls-gbps): ~480 GB/s on 8 x H100 (nccl-tests issues 212, 309; NVIDIA/nccl issue 1455)\n"
        "  latencies, per-protocol factors, LL caps, tree correction: NVIDIA/nccl src/graph/tuning.cc\n"
        "  multi-node H100 rings, for comparison: 392.7 GB/s busbw at 8 GiB on 2 x 8 H100 with 8 x 400G IB,\n"
        "    NCCL_ALGO=Ring NCCL_MIN_CTAS=24 (nccl-tests issue 309; tests/data/public-nccl-tests/\n"
        "    h100-ib400-gjaion-2x8-ring-minctas24.log): 49 GB/s a NIC\n"
        "  by the logs' GPU (the '#  Rank' lines; the first row whose pattern matches the name), unless given:\n");
    for (const auto& f : model::ncclGpuFamilies())
      std::printf("    /%s/ %s: ring %s, NVLS %.0f GB/s%s\n      %s\n", f.pattern.c_str(), f.prior.family.c_str(),
                  f.prior.ringGBps > 0 ? fmt::format("{:.1f} GB/s", f.prior.ringGBps).c_str() : "the default",
                  f.prior.nvlsGBps, f.prior.pcie ? ", PCIe latencies" : "", f.prior.source.c_str());
    return 0;
  };
}


}  // namespace fb::tools
