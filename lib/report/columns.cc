#include "report/columns.h"

namespace fb {

const std::vector<ColumnDoc>& csvColumnDocs() {
  static const std::vector<ColumnDoc> k = {
      {"size_bytes", "bytes",
       "S as nccl-tests defines it: the buffer for AllReduce, Broadcast and the P2P ring; the **total** buffer "
       "(count × element size × ranks) for AllGather and ReduceScatter; each rank's buffer for AllToAll"},
      {"count", "elements", "the count passed to the collective (per-rank count for AllGather/ReduceScatter)"},
      {"type", "—", "element type: float32, float64, int32, float16, bfloat16"},
      {"coll", "—",
       "allreduce, allgather, reducescatter, p2pring, alltoall, broadcast; an operator other than sum or a root "
       "other than 0 is named in brackets: `allreduce(prod)`, `broadcast(root=2)`"},
      {"impl", "—", "who moved the data: tcp (our sockets), mpi (MPI's own collectives, the reference row), nccl, cuda, verbs"},
      {"path", "—",
       "the path really used, as attested by the backend (interface and address, NCCL's own transport log, "
       "verbs port, CUDA peer attributes)"},
      {"placement", "—", "`out` (separate send/receive buffers) or `in` (in place)"},
      {"nranks", "—", "ranks in the job"},
      {"nnodes", "—", "nodes the ranks ran on"},
      {"iters", "—", "operations in the timed batch (the same on every rank)"},
      {"time_us", "microseconds",
       "**per operation: the median over the size's timed batches (`repeats`) of the batch time divided by "
       "`iters`**, each batch's time combined over ranks as `rank_time` says. By default each rank times its "
       "own batch and the slowest rank counts: it decides when a collective is done. `--timer nccl-tests -a 1` is "
       "nccl-tests' figure (host clock from a barrier until the stream is synchronised, averaged over ranks). "
       "Files written before these columns existed hold one batch, the rank timer, max."},
      {"algbw_GBps", "GB/s, GB = 10^9 bytes", "`size_bytes / time`"},
      {"busbw_GBps", "GB/s, GB = 10^9 bytes",
       "`algbw × factor` ([reading results](reading-results.md#algbw-and-busbw)); 0 at one rank (no link crossed)"},
      {"wrong", "elements",
       "wrong elements summed over ranks after the timed batch; empty (console: N/A) = data not checked. "
       "Anything but 0 means the row is not a valid measurement."},
      {"pct_nominal", "%", "busbw as a percentage of the path's nominal link rate, when the link rate is known; empty otherwise"},
      {"extra", "—",
       "backend details as `key=value;key=value` (`\\` escapes `;`, `=` and `\\`); `nominal_basis` says where "
       "the nominal rate comes from (or why there is none); `algorithm` names the tcp/verbs/cuda algorithm in words, "
       "`model_algo` the same as the [model](model.md)'s name for it (`ring`, `hier`, `one-shot`, ...)"},
      {"timer", "—",
       "`rank-events` (each rank's CUDA events around its batch), `rank-clock` (each rank's steady clock: host "
       "backends) or `nccl-tests` (nccl-tests' host clock from a barrier); [timers](timers.md). Files that say "
       "`gpu` or `host` (the old names) read as these"},
      {"rank_time", "—", "how each batch's time was combined over ranks: `max`, `avg`, `min`, `rank0` (nccl-tests' `-a` 3, 1, 2, 0)"},
      {"repeats", "—", "timed batches behind the row (`--repeat`; 3 by default, fewer once a size's batches took 2 s)"},
      {"time_us_min", "microseconds", "the fastest batch, per operation"},
      {"time_us_max", "microseconds", "the slowest batch, per operation"},
      {"busbw_min_GBps", "GB/s", "busbw of the slowest batch"},
      {"busbw_max_GBps", "GB/s", "busbw of the fastest batch"},
      {"p50_us", "microseconds",
       "`--per-op`: the median of one more batch timed operation by operation (for an even count the upper "
       "middle, as nccl-tests' `-I` p50), each operation's time the slowest rank's (run.json's row keeps every "
       "operation's time, in order, as `per_op_us`); empty otherwise"},
      {"p99_us", "microseconds", "`--per-op`: the 99th percentile (nearest rank) of the same batch; empty otherwise"},
      {"intra", "—",
       "NCCL: intra-node transports: `P2P/CUMEM over NVLink`, `P2P/IPC over PCIe`, `SHM`, ...; `none` (one GPU per "
       "node) ([training path](training-path.md#what-each-row-attests)); empty for other backends"},
      {"inter", "—", "NCCL: inter-node transport: `ib`, `roce`, `ib+roce`, `socket`, `efa`, `ofi`, `unknown`; `none`"},
      {"nics", "—", "NCCL: the NICs the NET connections used (`mlx5_2:1,mlx5_3:1`, `eth0`)"},
      {"rails", "—", "NCCL: distinct NICs used per node, the fewest over the nodes"},
      {"gdr", "—", "NCCL: GPUDirect RDMA: `yes` (every NET connection `/GDRDMA`), `no`, `partial (k of n)`"},
      {"pxn", "—", "NCCL: a send proxied through another GPU's NIC"},
      {"nvls", "—", "NCCL: `used`, `set up`, `available`, `disabled`, `not available`, `not set up`"},
      {"algo", "—", "NCCL's algorithm for this size (`p2p` for AllToAll and the P2P ring)"},
      {"proto", "—", "NCCL's protocol for this size (LL, LL128, Simple)"},
      {"channels", "—", "the channels NCCL ran this size's operation on"},
      {"algo_source", "—", "where `algo`/`proto`/`channels` come from: `profiler plugin (NCCL collective event)`, `NCCL TUNING debug line`, or why none"},
  };
  return k;
}

std::string columnsMarkdown() {
  std::string s =
      "# table.csv columns\n\n"
      "Generated by `fabricbench-report --columns` from lib/report/columns.cc (the list table.csv is written "
      "from); do not edit by hand. The console table shows the same figures. Fields are quoted per RFC 4180 "
      "when they hold a comma, a quote or a line break. Files written before a column existed end earlier "
      "and still read. How to read them: [reading results](reading-results.md).\n\n"
      "| column | unit | meaning |\n|---|---|---|\n";
  for (const auto& c : csvColumnDocs()) s += "| `" + c.name + "` | " + c.unit + " | " + c.meaning + " |\n";
  return s;
}

}  // namespace fb
