// tests/report/report_test.cpp: `slm report`'s summary of metrics.jsonl: the median time per step
// in the step (step_s) and between consecutive steps' ends (the wall clock a user waits), and each
// mixed dataset's validation loss (data.mix).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "report/report.h"

namespace fs = std::filesystem;
using namespace slm::report;

TEST(Report, TimePerStepInTheStepAndBetweenStepEnds) {
  const fs::path run = fs::temp_directory_path() / ("slm_report_" + std::to_string(::getpid()));
  fs::create_directories(run);
  {
    std::ofstream m(run / "metrics.jsonl");
    m << "{\"step\": 1, \"time\": 10.0, \"loss\": 3.0, \"step_s\": 0.5}\n"
      << "{\"step\": 2, \"time\": 11.0, \"loss\": 2.9, \"step_s\": 0.6}\n"
      << "{\"step\": 2, \"val_loss\": 3.1}\n"
      << "{\"step\": 3, \"time\": 13.0, \"loss\": 2.8, \"step_s\": 0.7}\n"
      << "{\"step\": 5, \"time\": 20.0, \"loss\": 2.7, \"step_s\": 0.8}\n";  // step 4 not logged: no gap 3 -> 5
  }
  const RunSummary s = summarize(run.string());
  EXPECT_DOUBLE_EQ(s.median_step_s, 0.7);
  EXPECT_DOUBLE_EQ(s.median_wall_step_s, 2.0);  // the gaps 1 and 2 (upper median)
  EXPECT_NE(summary_table(s).find("| time per step (median) | 0.700 s in the step (step_s), 2.000 s from one step's end to the next |"),
            std::string::npos)
      << summary_table(s);
  {
    std::ofstream m(run / "metrics.jsonl");
    m << "{\"step\": 1, \"loss\": 3.0, \"step_s\": 0.5}\n";  // an old run without `time`
  }
  EXPECT_NE(summary_table(summarize(run.string())).find("0.500 s in the step (step_s), not recorded from"), std::string::npos);
  fs::remove_all(run);
}

TEST(Report, EachMixedDatasetsValidationLossAtTheLastValidation) {
  const fs::path run = fs::temp_directory_path() / ("slm_report_mix_" + std::to_string(::getpid()));
  fs::create_directories(run);
  {
    std::ofstream m(run / "metrics.jsonl");
    m << "{\"step\": 1, \"loss\": 3.0}\n"
      << "{\"step\": 1, \"val_loss\": 3.1, \"val_ppl\": 22.2, \"val_loss/data/code\": 2.5}\n"
      << "{\"step\": 2, \"loss\": 2.9}\n"
      << "{\"step\": 2, \"val_loss\": 3.2, \"val_ppl\": 24.5, \"val_loss/data/code\": 2.25}\n";
  }
  const RunSummary s = summarize(run.string());
  EXPECT_EQ(s.best_val_step, 1);  // data.dir's loss decides the best
  EXPECT_EQ(s.last_val_step, 2);
  ASSERT_EQ(s.last_mix_val.size(), 1u);
  EXPECT_EQ(s.last_mix_val[0].first, "data/code");
  EXPECT_NE(summary_table(s).find("| validation loss of data/code (data.mix) at step 2 | 2.2500 |"), std::string::npos)
      << summary_table(s);
  fs::remove_all(run);
}
