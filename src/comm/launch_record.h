// comm/launch_record.h: what `slm launch --max-restarts` writes into the run's RUN/events.jsonl
// itself, for what its ranks cannot: a restart that failed again before it resumed (a rank died
// during rendezvous, so no rank recorded the restart) and giving up. The launcher learns the run
// folder from its ranks: it names a file in SLM_LAUNCH_RUN_FILE, and rank 0 of `slm train`
// writes its run folder there as it starts (tell_launcher_run_dir). Lines (one JSON object each,
// beside the ranks' "restart" events, train/events.h):
//   {"event": "restart_failed", "time", "restart", "cause" (why it was started), "failure" (how it ended)}
//   {"event": "gave_up", "time", "restarts", "cause" (the last failure)}
// Owns: LaunchRecord, tell_launcher_run_dir. No torch here.
#pragma once
#include <string>

namespace slm::comm {

class LaunchRecord {
 public:
  LaunchRecord();   // a file name of its own in SLM_LAUNCH_RUN_FILE, inherited by the ranks
  ~LaunchRecord();  // removes the file
  LaunchRecord(const LaunchRecord&) = delete;
  LaunchRecord& operator=(const LaunchRecord&) = delete;
  // Start `restart` (>= 1), begun because of `cause`, ended with `failure`: recorded unless its
  // rank 0 recorded the restart itself (it resumed).
  void restart_failed(int restart, const std::string& cause, const std::string& failure) const;
  void gave_up(int restarts, const std::string& cause) const;

 private:
  std::string run_dir() const;  // "" while no rank 0 has said
  std::string file_;
};

// Rank 0 of a job under `slm launch`: tells the launcher the run folder (no-op elsewhere).
void tell_launcher_run_dir(const std::string& run_dir);

}  // namespace slm::comm
