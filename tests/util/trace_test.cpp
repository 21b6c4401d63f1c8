// tests/util/trace_test.cpp: the training timeline (util/trace.h) records spans only while on,
// writes Chrome trace JSON, and `slm report`'s reading of it (report/trace.h) sums each rank's
// steps, forwards, backwards, collectives inside them and waits by kind.
#include "util/trace.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "report/trace.h"
#include "test_util.h"
#include "util/error.h"
#include "util/files.h"

namespace slm {

TEST(Trace, RecordsOnlyWhileOn) {
  trace::take_events(0);  // whatever an earlier test left
  { trace::Span off("F", trace::kCompute, 0); }
  EXPECT_EQ(trace::take_events(0), "");
  trace::set_recording(true);
  {
    trace::Span step("step", trace::kStep, -1, -1, 7);
    { trace::Span f("F", trace::kCompute, 3, 1); }
    { trace::Span w("wait gradient", trace::kWait, 2); }
    trace::Span started_on("optimizer");
    trace::set_recording(false);  // a span begun while on is kept
  }
  { trace::Span after("B", trace::kCompute, 1); }
  const std::string events = trace::take_events(5);
  EXPECT_EQ(trace::take_events(5), "");  // taken: cleared
  const auto j = nlohmann::json::parse(trace::trace_file_json(events, 5, "rank 5: pipeline rank 1"));
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X") by_name[e["name"]] = e;
  ASSERT_EQ(by_name.size(), 4u);
  EXPECT_EQ(by_name.at("step 7")["tid"], 2);
  EXPECT_EQ(by_name.at("step 7")["args"]["step"], 7);
  EXPECT_EQ(by_name.at("F 3.1")["args"]["micro"], 3);
  EXPECT_EQ(by_name.at("F 3.1")["args"]["chunk"], 1);
  EXPECT_EQ(by_name.at("wait gradient 2")["tid"], 1);
  EXPECT_EQ(by_name.at("optimizer")["pid"], 5);
  EXPECT_LE(by_name.at("step 7")["ts"].get<double>(), by_name.at("F 3.1")["ts"].get<double>());
  EXPECT_GE(by_name.at("step 7")["dur"].get<double>(), by_name.at("F 3.1")["dur"].get<double>());
  bool named = false;
  for (const auto& e : j["traceEvents"])
    named = named || (e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == "rank 5: pipeline rank 1");
  EXPECT_TRUE(named);
  EXPECT_NO_THROW(nlohmann::json::parse(trace::trace_file_json("", 0, "empty")));
}

// A rank's file as `slm train` writes it, with spans of the given lanes and seconds.
static std::string rank_file(int rank, const std::vector<std::tuple<std::string, int, double>>& spans) {
  std::string events;
  double ts = 0;
  for (const auto& [name, lane, s] : spans) {
    if (!events.empty()) events += ",";
    events += nlohmann::json{{"name", name}, {"ph", "X"}, {"pid", rank}, {"tid", lane}, {"ts", ts}, {"dur", s * 1e6}}.dump();
    ts += s * 1e6;
  }
  return trace::trace_file_json(events, rank, "rank " + std::to_string(rank));
}

TEST(Trace, ReportSumsPerStepAndMerges) {
  test::TempDir run;
  EXPECT_TRUE(report::read_traces(run.path).empty());  // not traced
  EXPECT_FALSE(report::merge_traces(run.path, run / "merged.json"));
  std::filesystem::create_directories(run / "trace");
  write_file_atomic(run / "trace/rank_1.json",
                    rank_file(1, {{"step 2", 2, 1.0}, {"F 0", 0, 0.2}, {"tp all-reduce", 3, 0.05}, {"B 0", 0, 0.4},
                                  {"wait gradient 0", 1, 0.1}, {"wait gradient 1", 1, 0.1}, {"optimizer", 0, 0.1},
                                  {"step 3", 2, 2.0}, {"F 0", 0, 0.4}, {"reduce gradients", 1, 0.5}}));
  write_file_atomic(run / "trace/rank_0.json", rank_file(0, {{"step 2", 2, 1.0}}));
  write_file_atomic(run / "trace/notes.txt", "not a rank's file");
  const auto ranks = report::read_traces(run.path);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].rank, 0);
  const report::RankTrace& r = ranks[1];
  EXPECT_EQ(r.name, "rank 1");
  EXPECT_EQ(r.steps, 2);
  EXPECT_DOUBLE_EQ(r.step_s, 1.5);       // (1 + 2) / 2 steps
  EXPECT_DOUBLE_EQ(r.forward_s, 0.3);    // (0.2 + 0.4) / 2
  EXPECT_DOUBLE_EQ(r.backward_s, 0.2);
  EXPECT_DOUBLE_EQ(r.inside_s, 0.025);
  EXPECT_DOUBLE_EQ(r.other_compute_s, 0.05);
  EXPECT_DOUBLE_EQ(r.waits_s, 0.35);
  EXPECT_DOUBLE_EQ(r.waits.at("wait gradient"), 0.1);  // both micro-batches under one kind
  EXPECT_DOUBLE_EQ(r.waits.at("reduce gradients"), 0.25);
  const std::string table = report::trace_table(ranks);
  EXPECT_NE(table.find("| rank 1 | 2 | 1.500 | 0.300 | 0.200 | 0.025 | 0.050 | 0.350 | reduce gradients 0.250, wait gradient 0.100 |"),
            std::string::npos) << table;
  ASSERT_TRUE(report::merge_traces(run.path, run / "merged.json"));
  const auto merged = nlohmann::json::parse(read_file(run / "merged.json"))["traceEvents"];
  std::set<int> pids;
  for (const auto& e : merged) pids.insert(e["pid"].get<int>());
  EXPECT_EQ(pids, (std::set<int>{0, 1}));
  write_file_atomic(run / "trace/rank_2.json", "{\"traceEvents\": 3}");
  EXPECT_THROW(report::read_traces(run.path), UserError);
}

}  // namespace slm
