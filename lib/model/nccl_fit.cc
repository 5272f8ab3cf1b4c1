// NCCL runs read from logs (what each run forced, its NCCL release, its transports) and the calibration of
// the cost model (nccl.cc) to them: predicted vs measured per size, a bounded Nelder-Mead fit. See nccl.h.
#include "model/nccl.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>

#include <fmt/format.h>

#include "core/text.h"

namespace fb::model {

// ---- runs ----------------------------------------------------------------------------------

// One KEY=VALUE of what a run forced. A log's environment holds every NCCL_* it set (NCCL_DEBUG, NCCL_IB_HCA, ...):
// those the model does not use are passed over; a key the user gives (fromUser) must be one of these.
void applyNcclSetting(NcclRun& r, const std::string& key, const std::string& val, bool fromUser) {
  const std::string k = text::lower(text::trim(key)), v = text::trim(val);
  if (k == "algo" || k == "nccl_algo") r.force.algo = parseNcclAlgo(v);
  else if (k == "proto" || k == "nccl_proto") r.force.proto = parseNcclProto(v);
  else if (k == "nccl_nvls_enable" || k == "nvls") {
    if (v != "0" && v != "1" && v != "2")  // NCCL's values: 0 off, 1 on, 2 (its default) where supported
      throw InputError(fmt::format("{}={}: expected 0 (NVLS disabled), 1 or 2", key, val));
    r.nvlsOff = v == "0";
  }
  else if (k == "nccl" || k == "nccl_version") {
    // "2.18.3" -> 21803
    int a = 0, b = 0, c = 0;
    if (std::sscanf(v.c_str(), "%d.%d.%d", &a, &b, &c) < 2 || a < 2 || b < 0 || c < 0)
      throw InputError(fmt::format("{}={}: expected an NCCL version such as 2.18.3", key, val));
    r.ncclVersion = a * 10000 + b * 100 + c;
  } else if (k == "channels" || k == "nccl_min_ctas" || k == "nccl_min_nchannels") {
    std::size_t used = 0;
    int n = 0;
    try {
      n = std::stoi(v, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != v.size() || n < 1)
      throw InputError(fmt::format("{}={}: needs a channel count >= 1", key, val));
    r.channels = n;
    r.channelsForced = true;
  } else if (k == "nccl_p2p_disable" || k == "nccl_shm_disable" || k == "nccl_ib_disable" || k == "nccl_net" ||
             k == "nccl_p2p_level" || k == "nccl_net_gdr_level" || k == "nccl_collnet_enable") {
    // A run's own setting that moves its traffic onto other paths (sockets, host memory): shown with the run, since
    // the model times the default paths and a fit then blames the NICs or the node's ring rate.
    if (fromUser)
      throw InputError(fmt::format("{}={}: the model has no setting for {} (known: algo, proto, nvls, nccl, channels)",
                                   key, val, key));
    const std::string setting = std::string(text::trim(key)) + "=" + v;
    if ((k == "nccl_net" || k == "nccl_p2p_level" || v != "0") &&
        std::find(r.unmodelled.begin(), r.unmodelled.end(), setting) == r.unmodelled.end())
      r.unmodelled.push_back(setting);
  } else if (fromUser) {
    throw InputError(fmt::format("{}={}: unknown key '{}' (known: algo, proto, nvls, nccl, channels, or NCCL_ALGO, "
                                 "NCCL_PROTO, NCCL_NVLS_ENABLE, NCCL_VERSION, NCCL_MIN_CTAS, NCCL_MIN_NCHANNELS)",
                                 key, val, key));
  }
}

void applyNcclSettings(NcclRun& r, const std::string& spec, const std::string& option) {
  for (const auto& kv : text::split(spec, ',')) {  // trimmed; "a=1,,b=2" and a trailing comma leave no empty item
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(
          fmt::format("{} '{}': expected KEY=VALUE (algo=ring, proto=simple, channels=24, nvls=0)", option, kv));
    try {
      applyNcclSetting(r, kv.substr(0, eq), kv.substr(eq + 1), true);
    } catch (const InputError& x) {
      throw InputError(fmt::format("{} {}", option, x.what()));
    }
  }
}

// The first GPU's name, from the first host's fingerprint (a fabricbench run.json, and an imported nccl-tests log
// whose importer builds its hosts from the '#  Rank' lines).
static std::string firstGpuName(const RunData& rd) {
  const nlohmann::json* fp = firstHostFingerprint(rd);
  if (!fp || !fp->is_object() || !fp->contains("gpus") || !(*fp)["gpus"].is_array() || (*fp)["gpus"].empty()) return "";
  const auto& g = (*fp)["gpus"][0];
  return g.is_object() && g.contains("name") && g["name"].is_string() ? g["name"].get<std::string>() : "";
}

std::vector<NcclRun> ncclRunsOf(const RunData& rd, const std::string& given) {
  std::map<std::string, NcclRun> byColl;
  std::vector<std::string> order;
  // Once per folder: the GPU's name, and the NVLS setting a fabricbench run keeps in its first host's
  // fingerprint environment (NCCL_NVLS_ENABLE=0 in ours).
  const std::string gpuName = firstGpuName(rd);
  std::string nvlsEnv;
  if (const nlohmann::json* fp = firstHostFingerprint(rd); fp && fp->contains("env") && (*fp)["env"].is_object()) {
    const auto& env = (*fp)["env"];
    if (env.contains("NCCL_NVLS_ENABLE") && env["NCCL_NVLS_ENABLE"].is_string())
      nvlsEnv = env["NCCL_NVLS_ENABLE"].get<std::string>();
  }
  for (const auto& s : rd.rows) {
    if (s.wrong > 0 && s.bytes > 0) byColl[s.coll].wrongRows.push_back({static_cast<double>(s.bytes), s.inPlace});
    if (s.wrong > 0 || s.bytes == 0 || !(s.timeUs > 0)) continue;
    auto& r = byColl[s.coll];
    if (r.coll.empty()) {
      r.coll = s.coll;
      r.label = rd.label + ": " + s.coll;
      r.nodes = std::max(1, s.nNodes);
      r.gpusPerNode = std::max(1, s.nRanks / r.nodes);
      order.push_back(s.coll);
    }
    auto it = std::find_if(r.rows.begin(), r.rows.end(), [&](const NcclRun::Row& x) { return x.bytes == s.bytes; });
    if (it == r.rows.end()) {
      r.rows.push_back({static_cast<double>(s.bytes), 0, 0});
      it = r.rows.end() - 1;
    }
    (s.inPlace ? it->inPlaceUs : it->timeUs) = s.timeUs;
  }
  std::vector<NcclRun> out;
  for (auto& c : order) {
    NcclRun r = byColl[c];
    for (auto& row : r.rows)
      if (!(row.timeUs > 0)) std::swap(row.timeUs, row.inPlaceUs), row.inPlace = true;  // only in-place measured
    std::sort(r.rows.begin(), r.rows.end(), [](auto& a, auto& b) { return a.bytes < b.bytes; });
    // What the run itself says it forced (the importer keeps NCCL_* settings under nccl_tests.env).
    if (rd.runJson.is_object() && rd.runJson.contains("nccl_tests")) {
      const auto& nt = rd.runJson["nccl_tests"];
      if (nt.contains("env") && nt["env"].is_object())
        for (auto& [k, v] : nt["env"].items())
          if (v.is_string()) applyNcclSetting(r, k, v.get<std::string>());
      if (nt.contains("channels") && nt["channels"].is_number_integer() && r.channels == 0)
        r.channels = nt["channels"].get<int>();
      // "0 nvls channels" on nodes of 2+ GPUs: NCCL set up no NVLS (NCCL_NVLS_ENABLE=0, or no NVSwitch multicast).
      if (nt.contains("nvls_channels") && nt["nvls_channels"].is_number_integer() &&
          nt["nvls_channels"].get<int>() == 0 && r.gpusPerNode > 1)
        r.nvlsOff = true;
      // Same-process GPUs: the INFO's "via P2P/direct pointer"; without transports, nccl-tests' -g N (one thread).
      bool anyTransport = false, direct = false;
      if (nt.contains("transports") && nt["transports"].is_array())
        for (const auto& t : nt["transports"])
          if (t.is_string()) {
            anyTransport = true;
            direct |= t.get<std::string>() == "P2P/direct";
          }
      const int nGpus = nt.contains("ngpus") && nt["ngpus"].is_number_integer() ? nt["ngpus"].get<int>() : 1;
      r.directP2p = r.gpusPerNode > 1 && (anyTransport ? direct : nGpus > 1);
      if (nt.value("library", "") == "rccl") r.rccl = r.nvlsOff = true;
      if (nt.contains("nccl_version") && nt["nccl_version"].is_string())
        applyNcclSetting(r, "nccl", nt["nccl_version"].get<std::string>());
    }
    if (!nvlsEnv.empty()) applyNcclSetting(r, "NCCL_NVLS_ENABLE", nvlsEnv);
    r.gpu = gpuName;
    applyNcclSettings(r, given, "--given");
    out.push_back(r);
  }
  return out;
}

// ---- calibration -----------------------------------------------------------------------------

std::vector<NcclFitPoint> ncclPredict(const NcclMachine& base, const NcclRun& r) {
  NcclMachine m = base;
  m.nodes = r.nodes;
  m.gpusPerNode = r.gpusPerNode;
  if (r.channels > 0) m.channels = r.channels;
  m.ncclVersion = r.ncclVersion;
  m.directP2p = r.directP2p;
  if (r.nvlsOff) m.nvlsGBps = 0;  // NCCL_NVLS_ENABLE=0: NVLS and NVLSTree are not candidates
  std::vector<NcclFitPoint> pts;
  for (const auto& row : r.rows) {
    m.inPlace = row.inPlace;
    auto ch = ncclChoose(r.coll, m, row.bytes, r.force);
    NcclFitPoint p;
    p.run = r.label;
    p.bytes = row.bytes;
    p.measuredUs = row.timeUs;
    p.modelUs = ch.best.timeUs;
    p.errPct = (p.modelUs - p.measuredUs) / p.measuredUs * 100;
    p.algo = ch.best.algo;
    p.proto = ch.best.proto;
    // One rank: in place does nothing, out of place copies; their difference is no noise.
    p.noisy = m.ranks() > 1 && row.inPlaceUs > 0 && std::fabs(row.inPlaceUs - row.timeUs) / std::min(row.inPlaceUs, row.timeUs) > 0.2;
    pts.push_back(p);
  }
  // A size that took over twice as long as every larger size of its run (those not noisy) is the log's own anomaly (a
  // stalled size, a paste from another run): left out of the fit's loss, still shown and counted by the bound. Every
  // larger size, so that one too-fast large row does not make the sizes below it outliers.
  for (auto& p : pts) {
    bool larger = false, allFaster = true;
    for (const auto& q : pts)
      if (q.bytes > p.bytes && !q.noisy) {
        larger = true;
        allFaster = allFaster && p.measuredUs > kNcclOutlierRatio * q.measuredUs;
      }
    p.outlier = larger && allFaster;
  }
  return pts;
}

std::pair<double, double> ncclErrStats(const std::vector<NcclFitPoint>& pts, double minBytes) {
  std::vector<double> e;
  for (const auto& p : pts)
    if (p.counts(minBytes)) e.push_back(std::fabs(p.errPct));
  if (e.empty()) return {0, 0};
  std::sort(e.begin(), e.end());
  double med = e.size() % 2 ? e[e.size() / 2] : 0.5 * (e[e.size() / 2 - 1] + e[e.size() / 2]);
  return {med, e.back()};
}

namespace {
struct Param {
  const char* name;
  double NcclMachine::*field;
  double lo, hi;
  bool prior;               // pulled towards the prior value
  bool hiIsLimit = false;   // hi is a physical limit (an efficiency of 1, the GPUs' NVLink rate), not a search bound
};

// Nelder-Mead on f over x (log-space parameters), a few restarts from the best point.
std::vector<double> nelderMead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x0) {
  const std::size_t n = x0.size();
  for (int restart = 0; restart < 3; ++restart) {
    std::vector<std::vector<double>> p(n + 1, x0);
    for (std::size_t i = 0; i < n; ++i) p[i + 1][i] += 0.3;
    std::vector<double> v(n + 1);
    for (std::size_t i = 0; i <= n; ++i) v[i] = f(p[i]);
    for (int it = 0; it < 150 * static_cast<int>(n); ++it) {
      std::vector<std::size_t> o(n + 1);
      for (std::size_t i = 0; i <= n; ++i) o[i] = i;
      std::sort(o.begin(), o.end(), [&](std::size_t a, std::size_t b) { return v[a] < v[b]; });
      auto P = p;
      auto V = v;
      for (std::size_t i = 0; i <= n; ++i) {
        p[i] = P[o[i]];
        v[i] = V[o[i]];
      }
      std::vector<double> c(n, 0);
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) c[j] += p[i][j] / n;
      auto along = [&](double t) {
        std::vector<double> x(n);
        for (std::size_t j = 0; j < n; ++j) x[j] = c[j] + t * (p[n][j] - c[j]);
        return x;
      };
      auto xr = along(-1);
      double fr = f(xr);
      if (fr < v[0]) {
        auto xe = along(-2);
        double fe = f(xe);
        if (fe < fr) p[n] = xe, v[n] = fe;
        else p[n] = xr, v[n] = fr;
      } else if (fr < v[n - 1]) {
        p[n] = xr, v[n] = fr;
      } else {
        auto xc = along(0.5);
        double fc = f(xc);
        if (fc < v[n]) {
          p[n] = xc, v[n] = fc;
        } else {
          for (std::size_t i = 1; i <= n; ++i) {
            for (std::size_t j = 0; j < n; ++j) p[i][j] = p[0][j] + 0.5 * (p[i][j] - p[0][j]);
            v[i] = f(p[i]);
          }
        }
      }
    }
    std::size_t b = std::min_element(v.begin(), v.end()) - v.begin();
    x0 = p[b];
  }
  return x0;
}

// A few sweeps of a log-spaced grid search per parameter inside its bounds. The loss is flat where a
// min() of links caps a bandwidth (a NIC rate above the node's ring), so Nelder-Mead alone stalls there.
std::vector<double> coordinateSweep(const std::function<double(const std::vector<double>&)>& f,
                                    std::vector<double> x, const std::vector<Param>& ps) {
  double best = f(x);
  for (int sweep = 0; sweep < 3; ++sweep)
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double lo = std::log(ps[i].lo), hi = std::log(ps[i].hi);
      const int steps = 60;
      for (int k = 0; k <= steps; ++k) {
        auto y = x;
        y[i] = lo + (hi - lo) * k / steps;
        double v = f(y);
        if (v < best) best = v, x = y;
      }
    }
  return x;
}
}  // namespace

NcclFit ncclCalibrate(const NcclMachine& priorIn, const std::vector<NcclRun>& runs, const NcclFitOptions& opt) {
  if (runs.empty()) throw InputError("calibration needs at least one measured run");
  // The node's ring rate comes from the node's own runs: with single- and multi-node runs, the
  // single-node ones are fitted first and their ring rate is kept, since a multi-node Ring run
  // measures min(node ring, NICs) and cannot say which of the two binds.
  NcclMachine prior = priorIn;
  std::vector<NcclRun> singles;
  for (const auto& r : runs)
    if (r.nodes == 1 && r.gpusPerNode > 1) singles.push_back(r);
  const bool twoStage = !singles.empty() && singles.size() < runs.size();
  if (twoStage) prior.ringIntraGBps = ncclCalibrate(priorIn, singles, opt).machine.ringIntraGBps;
  bool single = false, multi = false, allreduce = false, nicSeen = false, oneRank = false, direct = false,
       separate = false, midSizes = false, midMulti = false, p2pNode = false, a2aNode = false;
  for (const auto& r : runs) {
    // Latencies and the LL/LL128 shares show below 64 MiB: a multi-node sweep of larger sizes alone leaves them at
    // the prior. Single-node runs keep them free: pinned there, set C's 128 MiB-4 GiB 1 x 8 run traded NVLS for an
    // impossible 454 GB/s ring.
    for (const auto& row : r.rows) {
      const bool mid = row.bytes >= opt.minBytes && row.bytes < (64 << 20);
      midSizes |= mid;
      midMulti |= mid && r.nodes > 1;  // the network's latency shows only in multi-node runs
    }
    oneRank |= r.nodes * r.gpusPerNode == 1;
    direct |= r.directP2p;
    separate |= !r.directP2p && r.gpusPerNode > 1;
    single |= r.nodes == 1 && r.gpusPerNode > 1;
    multi |= r.nodes > 1;
    a2aNode |= r.nodes == 1 && r.gpusPerNode > 1 && r.coll == "alltoall";
    p2pNode |= r.nodes == 1 && r.gpusPerNode > 1 && (r.coll == "p2pring" || r.coll == "alltoall");  // P2P channels
    // NVLS runs AllReduce on nodes of 2+ GPUs, unless the run had NCCL_NVLS_ENABLE=0.
    // ... and not forced to another algorithm: only such a run says anything of NVLS's rate
    const bool nvlsRun = r.coll == "allreduce" && r.gpusPerNode > 1 && !r.nvlsOff &&
                         (!r.force.algo || *r.force.algo == NcclAlgo::kNvls || *r.force.algo == NcclAlgo::kNvlsTree);
    allreduce |= nvlsRun;
    // The NICs' rate shows only where NVLS cannot stand in for them: a run forced off NVLS/NVLSTree,
    // one GPU per node, a collective NVLS does not run, a machine without NVLS, or 3+ nodes. A 2-node default
    // AllReduce on NVSwitch nodes runs NVLSTree, capped by the node's NVLS rate, not the NICs; from 3 nodes a
    // node's tree edges double and the NICs bind again.
    const bool nvlsPossible = nvlsRun && prior.nvlsGBps > 0 && r.nodes <= 2;
    nicSeen |= r.nodes > 1 && !nvlsPossible;
  }
  // LL and LL128 efficiencies at most 1: tuning.cc's factors are the protocols' payload shares.
  std::vector<Param> ps;
  if (midSizes || !multi) {
    if (separate) ps.push_back({"latIntraScale", &NcclMachine::latIntraScale, 0.2, 10, true});  // hops between processes
    ps.insert(ps.end(), {{"effLL", &NcclMachine::effLL, 0.1, 1.0, false, true},
                         {"effLL128", &NcclMachine::effLL128, 0.1, 1.0, false, true},
                         {"effTreeLL128", &NcclMachine::effTreeLL128, 0.1, 1.0, false, true}});
    if (direct) ps.push_back({"latDirectScale", &NcclMachine::latDirectScale, 0.2, 10, true});
    if (multi && midMulti) ps.push_back({"latNetScale", &NcclMachine::latNetScale, 0.2, 10, true});
  }
  if (a2aNode) {
    if (!(prior.a2aIntraGBps > 0)) prior.a2aIntraGBps = prior.ringIntraGBps;  // starts at, and is pulled to, the ring's
    ps.push_back({"a2aIntraGBps", &NcclMachine::a2aIntraGBps, 10, 1000, true});
  }
  if (p2pNode) ps.push_back({"p2pChGBps", &NcclMachine::p2pChGBps, 2, 200, true});
  if (nicSeen) ps.push_back({"nicGBps", &NcclMachine::nicGBps, 0.5, 100, true});
  if (single && !twoStage)
    ps.push_back({"ringIntraGBps", &NcclMachine::ringIntraGBps, 10, prior.ringLineGBps > 0 ? prior.ringLineGBps : 1000, true,
                  prior.ringLineGBps > 0});
  if (oneRank) ps.push_back({"launchUs", &NcclMachine::launchUs, 0.5, 200, false});
  if (oneRank) ps.push_back({"copyLatUs", &NcclMachine::copyLatUs, 0.05, 200, false});
  if (oneRank) ps.push_back({"copyGBps", &NcclMachine::copyGBps, 10, 20000, true});
  if (allreduce && prior.nvlsGBps > 0) ps.push_back({"nvlsGBps", &NcclMachine::nvlsGBps, 10, 1200, true});
  auto machineAt = [&](const std::vector<double>& x) {
    NcclMachine m = prior;
    for (std::size_t i = 0; i < ps.size(); ++i) m.*(ps[i].field) = std::clamp(std::exp(x[i]), ps[i].lo, ps[i].hi);
    return m;
  };
  auto loss = [&](const std::vector<double>& x) {
    NcclMachine m = machineAt(x);
    double s = 0;
    for (std::size_t i = 0; i < ps.size(); ++i) {
      const double raw = std::exp(x[i]), v = m.*(ps[i].field);  // v: clamped to the bounds, raw: where the search is
      if (raw < ps[i].lo) s += 100 * std::pow(std::log(ps[i].lo / raw), 2);
      if (raw > ps[i].hi) s += 100 * std::pow(std::log(raw / ps[i].hi), 2);
      if (ps[i].prior) s += opt.priorWeight * std::pow(std::log(v / (prior.*(ps[i].field))), 2);
    }
    for (const auto& r : runs)
      for (const auto& p : ncclPredict(m, r))
        if (p.counts(opt.minBytes) && !p.outlier) s += std::pow(std::log(p.modelUs / p.measuredUs), 2);
    return s;
  };
  std::vector<double> x0;
  for (auto& p : ps) x0.push_back(std::log(prior.*(p.field)));
  auto x = ps.empty() ? x0 : nelderMead(loss, coordinateSweep(loss, x0, ps));
  NcclFit fit;
  fit.machine = machineAt(x);
  fit.machine.nodes = runs.front().nodes;
  fit.machine.gpusPerNode = runs.front().gpusPerNode;
  for (auto& p : ps) {
    fit.freed.push_back(p.name);
    // At a bound: the data pushed it there and no further, so its value is the bound's, not a measurement (a
    // physical limit such as an efficiency of 1 is no such bound).
    const double v = fit.machine.*(p.field);
    if (v <= p.lo * 1.01 || (v >= p.hi / 1.01 && !p.hiIsLimit))
      fit.atBound.push_back(fmt::format("{} at its {} bound {:g}", p.name, v <= p.lo * 1.01 ? "lower" : "upper",
                                        v <= p.lo * 1.01 ? p.lo : p.hi));
  }
  if (twoStage) fit.freed.push_back("ringIntraGBps (on the single-node runs)");
  for (const auto& r : runs) {
    auto pts = ncclPredict(fit.machine, r);
    fit.points.insert(fit.points.end(), pts.begin(), pts.end());
  }
  auto [med, mx] = ncclErrStats(fit.points, opt.minBytes);
  fit.medianAbsErrPct = med;
  fit.maxAbsErrPct = mx;
  return fit;
}

}  // namespace fb::model
