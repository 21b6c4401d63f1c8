// train/events.h: RUN/events.jsonl, the run's record of what happened to it besides its steps:
// each restart of the job (when, why, from which step it resumed, how many finished steps were lost,
// how long it was down, on which layout it ran and goes on). Rank 0 of the restarted job appends the line;
// the launcher adds what no rank can (comm/launch_record.h: a restart that failed before it resumed,
// giving up); `slm report` shows them. No torch here.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace slm::train {

struct RestartEvent {
  double time = 0;           // unix seconds, when the restarted job resumed
  int restart = 0;           // 1 = the first restart
  std::string cause;         // "rank 1 was killed by signal 9"
  int64_t resumed_step = 0;  // the checkpoint's step (0: none, started over)
  int64_t last_step = 0;     // the last step metrics.jsonl recorded before the failure
  double down_s = 0;         // from that step's end to the resume (detection, restart, loading)
  int world = 1;             // ranks of the restarted job
  std::string layout;        // its layout, "pp 2 x dp 1 x tp 1, ZeRO 0"
  std::string old_layout;    // the layout that saved the checkpoint it resumed from ("" if unknown)
  int64_t steps_lost() const { return last_step > resumed_step ? last_step - resumed_step : 0; }
};

// The last training step recorded in RUN/metrics.jsonl and the unix time at its end ({0, 0} when
// there is none); reads the file's tail only.
std::pair<int64_t, double> last_logged_step(const std::string& run);
void append_restart_event(const std::string& run, const RestartEvent& e);
// Every restart in RUN/events.jsonl (none when the file is missing); lines it cannot read are skipped.
std::vector<RestartEvent> read_restart_events(const std::string& run);
std::string describe(const RestartEvent& e);  // "restart 1 (rank 1 was killed by signal 9): ..."
// What the launcher itself recorded in RUN/events.jsonl (comm/launch_record.h), in words: "restart 2
// (cause) failed before it resumed: FAILURE", "gave up after 2 restarts (last: CAUSE)".
std::vector<std::string> read_launcher_events(const std::string& run);

}  // namespace slm::train
