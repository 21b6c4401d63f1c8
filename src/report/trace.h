// report/trace.h: the timelines of `log.trace_steps` (RUN/trace/rank_K.json, util/trace.h) merged
// into one file and summed up per rank. Owns: RankTrace, read_traces, merge_traces, trace_table,
// rank_files.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace slm::report {

struct RankTrace {
  int rank = 0;
  std::string name;                  // "rank 2: pipeline rank 1, replica 0, tp rank 0"
  int steps = 0;                     // traced steps
  double step_s = 0;                 // per traced step (means)
  double forward_s = 0, backward_s = 0, other_compute_s = 0, waits_s = 0;
  double inside_s = 0;               // collectives inside forward / backward (tp all-reduces)
  std::map<std::string, double> waits;  // per kind of wait ("wait activations", "reduce gradients", ...)
};

// RUN/FOLDER/rank_K.json (a rank's file of log.trace_steps or log.profile_steps) as (K, path), by rank.
std::vector<std::pair<int, std::string>> rank_files(const std::string& run_dir, const std::string& folder);
// Every RUN/trace/rank_*.json, by rank (empty when the run traced nothing). UserError (one line)
// for a file that is not a trace.
std::vector<RankTrace> read_traces(const std::string& run_dir);
// Writes every rank's events into OUT (one Chrome trace for Perfetto / chrome://tracing); false when
// there is nothing to merge.
bool merge_traces(const std::string& run_dir, const std::string& out);
// Markdown: per rank, per step, forward / backward (and the collectives inside them) / other
// compute / waits (the largest named).
std::string trace_table(const std::vector<RankTrace>& ranks);

}  // namespace slm::report
