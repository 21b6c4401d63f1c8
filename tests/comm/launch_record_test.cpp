// tests/comm/launch_record_test.cpp: what the launcher records in RUN/events.jsonl for what no rank
// can: a restart that failed before it resumed (only when its rank 0 did not record the restart)
// and giving up; rank 0 tells the launcher the run folder; `slm report` reads the lines back.
#include "comm/launch_record.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "test_util.h"
#include "train/events.h"
#include "util/files.h"

namespace slm::comm {
namespace {

TEST(LaunchRecord, FailedRestartsAndGivingUp) {
  test::TempDir tmp;
  const std::string run = tmp / "run";
  ::unsetenv("RANK");
  {
    const LaunchRecord record;
    record.gave_up(2, "x");  // no rank has said where the run is: nothing to write
    EXPECT_FALSE(path_exists(run + "/events.jsonl"));
    ::setenv("RANK", "1", 1);
    tell_launcher_run_dir(run);  // only rank 0 speaks
    record.gave_up(2, "x");
    EXPECT_FALSE(path_exists(run + "/events.jsonl"));
    ::setenv("RANK", "0", 1);
    tell_launcher_run_dir(run);
    // Restart 1 resumed (its rank 0 recorded it): nothing more; restart 2 died in rendezvous.
    std::filesystem::create_directories(run);
    train::RestartEvent resumed;
    resumed.restart = 1, resumed.cause = "rank 1 was killed by signal 9";
    train::append_restart_event(run, resumed);
    record.restart_failed(1, "rank 1 was killed by signal 9", "rank 0 exited with code 4");
    record.restart_failed(2, "rank 0 exited with code 4", "rank 1 exited with code 5");
    record.gave_up(2, "rank 1 exited with code 5");
  }
  ::unsetenv("RANK");
  ::unsetenv("SLM_LAUNCH_RUN_FILE");
  EXPECT_EQ(train::read_restart_events(run).size(), 1u);
  EXPECT_EQ(train::read_launcher_events(run),
            (std::vector<std::string>{"restart 2 (rank 0 exited with code 4) failed before it resumed: rank 1 exited "
                                      "with code 5",
                                      "gave up after 2 restarts (last: rank 1 exited with code 5)"}));
}

}  // namespace
}  // namespace slm::comm
