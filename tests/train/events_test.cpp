// tests/train/events_test.cpp: RUN/events.jsonl: restart records written and read back, the last
// logged step found in metrics.jsonl's tail (a cut first line and validation lines ignored).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "train/events.h"

namespace fs = std::filesystem;
using namespace slm::train;

TEST(Events, RestartsRoundTrip) {
  const fs::path run = fs::temp_directory_path() / ("slm_events_" + std::to_string(::getpid()));
  fs::create_directories(run);
  EXPECT_TRUE(read_restart_events(run.string()).empty());
  EXPECT_EQ(last_logged_step(run.string()), (std::pair<int64_t, double>{0, 0}));
  {
    std::ofstream m(run / "metrics.jsonl");
    m << "{\"step\": 7, \"time\": 100.5, \"loss\": 3.0}\n{\"step\": 8, \"time\": 101.5, \"loss\": 2.9}\n"
      << "{\"step\": 8, \"val_loss\": 3.1}\n{\"step\": 9, \"lo";  // killed mid-write
  }
  EXPECT_EQ(last_logged_step(run.string()), (std::pair<int64_t, double>{8, 101.5}));
  RestartEvent e{200.0, 1, "rank 1 was killed by signal 9", 5, 8, 3.5, 2, "pp 2 x dp 1 x tp 1, ZeRO 0", ""};
  EXPECT_EQ(e.steps_lost(), 3);
  append_restart_event(run.string(), e);
  e.restart = 2, e.resumed_step = 10, e.last_step = 10, e.old_layout = "pp 2 x dp 2 x tp 1, ZeRO 0";
  append_restart_event(run.string(), e);
  { std::ofstream(run / "events.jsonl", std::ios::app) << "not json\n{\"event\": \"other\"}\n"; }
  const std::vector<RestartEvent> got = read_restart_events(run.string());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].cause, "rank 1 was killed by signal 9");
  EXPECT_EQ(got[0].steps_lost(), 3);
  EXPECT_DOUBLE_EQ(got[0].down_s, 3.5);
  EXPECT_EQ(got[1].steps_lost(), 0);
  EXPECT_EQ(describe(got[0]), "restart 1 (rank 1 was killed by signal 9): resumed at step 5, 3 finished steps lost, "
                              "down 3.5 s, 2 ranks (pp 2 x dp 1 x tp 1, ZeRO 0)");
  EXPECT_EQ(got[1].old_layout, "pp 2 x dp 2 x tp 1, ZeRO 0");  // a shrunk job: the layout before and after
  EXPECT_EQ(describe(got[1]), "restart 2 (rank 1 was killed by signal 9): resumed at step 10, 0 finished steps lost, "
                              "down 3.5 s, 2 ranks (pp 2 x dp 1 x tp 1, ZeRO 0; was pp 2 x dp 2 x tp 1, ZeRO 0)");
  fs::remove_all(run);
}
