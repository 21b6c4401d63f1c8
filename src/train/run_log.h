// train/run_log.h: what a run tells its user, on rank 0: metrics.jsonl (one JSON object a line,
// flushed, so a killed run keeps its metrics), the same numbers as TensorBoard curves
// (log.tensorboard), and lines on stderr that leave a terminal's progress line intact.
// Owns: RunLog. Used by training's loop and by `slm embed tune`.
#pragma once
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace slm::report {
struct TensorBoardWriter;
}

namespace slm::train {

struct RunLog {
  // `main`: this rank writes (on the others every call does nothing). `metrics_path`: the JSONL
  // file appended to; `tensorboard_dir`: "" for no curves.
  RunLog(bool main, const std::string& metrics_path, const std::string& tensorboard_dir = "");
  ~RunLog();
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;

  void write(const nlohmann::json& j);  // one metrics line (and its numbers as curves)
  void say(const std::string& line);    // a line of its own, after the progress line on a terminal
  // The progress line: rewritten in place on a terminal; elsewhere printed where `plain` is true
  // (every N steps), so that a log file gets one line per N steps.
  void progress(const std::string& line, bool plain);
  void end_progress();  // ends the progress line on a terminal

  bool main = false, tty = false;
  FILE* metrics = nullptr;
  std::unique_ptr<report::TensorBoardWriter> board;
};

}  // namespace slm::train
