// comm/launch_record.cpp: see launch_record.h.
#include "comm/launch_record.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>

#include "util/files.h"

namespace slm::comm {
namespace {

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Appends one line to RUN/events.jsonl (the folder made if needed); a failure to write is said on
// stderr, never thrown: the launcher's own exit code matters more.
void append_event(const std::string& run, const nlohmann::json& j) {
  std::error_code ec;
  std::filesystem::create_directories(run, ec);
  FILE* f = std::fopen((run + "/events.jsonl").c_str(), "a");
  if (!f || std::fprintf(f, "%s\n", j.dump().c_str()) < 0)
    std::fprintf(stderr, "slm launch: cannot write %s/events.jsonl\n", run.c_str());
  if (f) std::fclose(f);
}

// Whether RUN/events.jsonl has the ranks' own record of restart n.
bool restart_recorded(const std::string& run, int n) {
  std::ifstream in(run + "/events.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.value("event", "") == "restart" && j.value("restart", -1) == n) return true;
  }
  return false;
}

}  // namespace

LaunchRecord::LaunchRecord() {
  const char* tmp = std::getenv("TMPDIR");
  file_ = fmt::format("{}/slm-launch-{}.run", tmp && *tmp ? tmp : "/tmp", ::getpid());
  std::remove(file_.c_str());
  ::setenv("SLM_LAUNCH_RUN_FILE", file_.c_str(), 1);
}

LaunchRecord::~LaunchRecord() { std::remove(file_.c_str()); }

std::string LaunchRecord::run_dir() const {
  std::ifstream in(file_);
  std::string dir;
  std::getline(in, dir);
  return dir;
}

void LaunchRecord::restart_failed(int restart, const std::string& cause, const std::string& failure) const {
  const std::string run = run_dir();
  if (run.empty() || restart_recorded(run, restart)) return;
  append_event(run, {{"event", "restart_failed"}, {"time", now_unix()}, {"restart", restart}, {"cause", cause},
                     {"failure", failure}});
}

void LaunchRecord::gave_up(int restarts, const std::string& cause) const {
  if (const std::string run = run_dir(); !run.empty())
    append_event(run, {{"event", "gave_up"}, {"time", now_unix()}, {"restarts", restarts}, {"cause", cause}});
}

void tell_launcher_run_dir(const std::string& run_dir) {
  const char* file = std::getenv("SLM_LAUNCH_RUN_FILE");
  const char* rank = std::getenv("RANK");
  if (!file || !*file || (rank && std::string(rank) != "0") || run_dir.empty()) return;
  try {
    write_file_atomic(file, std::filesystem::absolute(run_dir).lexically_normal().string() + "\n");
  } catch (const std::exception&) {  // the launcher then records nothing of its own
  }
}

}  // namespace slm::comm
