// train/run_log.cpp: see run_log.h.
#include "train/run_log.h"

#include <unistd.h>

#include <chrono>
#include <utility>
#include <vector>

#include "report/tensorboard.h"
#include "util/error.h"

namespace slm::train {
namespace {

// One metrics line's numbers as TensorBoard scalars of its step.
void write_curves(report::TensorBoardWriter& board, const nlohmann::json& j) {
  std::vector<std::pair<std::string, float>> values;
  for (const auto& [field, v] : j.items())
    if (const std::string tag = report::tensorboard_tag(field); !tag.empty() && v.is_number())
      values.emplace_back(tag, v.get<float>());
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  board.scalars(j.value("step", int64_t{0}), j.contains("time") ? j["time"].get<double>() : now, values);
}

}  // namespace

RunLog::RunLog(bool main_, const std::string& metrics_path, const std::string& tensorboard_dir)
    : main(main_), tty(main_ && ::isatty(STDERR_FILENO) == 1) {
  if (!main) return;
  metrics = std::fopen(metrics_path.c_str(), "a");
  if (!metrics) throw UserError(metrics_path + ": cannot open for writing");
  if (!tensorboard_dir.empty()) board = std::make_unique<report::TensorBoardWriter>(tensorboard_dir);
}

RunLog::~RunLog() {
  if (metrics) std::fclose(metrics);
}

void RunLog::write(const nlohmann::json& j) {
  if (!main) return;
  std::fprintf(metrics, "%s\n", j.dump().c_str());
  std::fflush(metrics);
  if (board) write_curves(*board, j);
}

void RunLog::say(const std::string& line) {
  if (!main) return;
  if (tty) std::fprintf(stderr, "\n");
  std::fprintf(stderr, "%s\n", line.c_str());
}

void RunLog::progress(const std::string& line, bool plain) {
  if (tty) std::fprintf(stderr, "\r%s\033[K", line.c_str());
  else if (main && plain) std::fprintf(stderr, "%s\n", line.c_str());
}

void RunLog::end_progress() {
  if (tty) std::fprintf(stderr, "\n");
}

}  // namespace slm::train
