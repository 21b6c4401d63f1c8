// train/profiler.cpp: see profiler.h.
#include "train/profiler.h"

#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "util/torch_compat.h"

namespace slm::train {
namespace kineto = torch::autograd::profiler;
namespace prof = torch::profiler::impl;
using nlohmann::json;

std::pair<int64_t, int64_t> profile_window(int64_t first, int64_t end, int64_t n) {
  const int64_t steps = std::min(n, end - first);
  if (steps <= 0) return {0, 0};
  const int64_t after = first + std::min<int64_t>(3, end - first - steps);
  return {after, after + steps};
}

namespace {

const prof::ProfilerConfig& config() {
  static const prof::ProfilerConfig c(prof::ProfilerState::KINETO, false, false, false, false, false);
  return c;
}

// The trace category of an event: the GPU's own (kernels, copies, memsets; a process per device,
// a thread per stream) or the host's (CUDA runtime calls, operators).
std::string category(const kineto::KinetoEvent& e, const std::string& name) {
  if (e.deviceType() == c10::DeviceType::CUDA)
    return name.rfind("Memcpy", 0) == 0 ? "gpu_memcpy" : name.rfind("Memset", 0) == 0 ? "gpu_memset" : "kernel";
  const bool api = name.rfind("cuda", 0) == 0 ||  // the runtime's calls, and the driver's (cuLaunchKernel)
                   (name.size() > 2 && name.rfind("cu", 0) == 0 && std::isupper(static_cast<unsigned char>(name[2])));
  return api ? "cuda_runtime" : "cpu_op";
}

json process_name(int pid, const std::string& name) {
  return {{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", name}}}};
}

}  // namespace

void start_profiler(bool cuda) {
  // Kineto (2.x) logs its stages, and errors it recovers from, on stderr: none of the user's
  // business unless KINETO_LOG_LEVEL (0-5) asks for them.
  setenv("KINETO_LOG_LEVEL", "6", /*overwrite=*/0);
  std::set<prof::ActivityType> activities{prof::ActivityType::CPU};
  if (cuda) activities.insert(prof::ActivityType::CUDA);
  kineto::prepareProfiler(config(), activities);
  kineto::enableProfiler(config(), activities);
}

json stop_profiler(const std::string& source, int64_t steps) {
  const std::unique_ptr<kineto::ProfilerResult> result = kineto::disableProfiler();
  double origin = -1;
  for (const kineto::KinetoEvent& e : result->events()) {
    const double start = compat::event_span_us(e).first;
    origin = origin < 0 ? start : std::min(origin, start);
  }
  json events = json::array({process_name(0, "CPU")});
  std::set<int> devices;
  for (const kineto::KinetoEvent& e : result->events()) {
    const auto [start, dur] = compat::event_span_us(e);
    const std::string name = e.name(), cat = category(e, name);
    const bool gpu = e.deviceType() == c10::DeviceType::CUDA;
    const int pid = gpu ? 1 + static_cast<int>(e.deviceIndex()) : 0;
    if (gpu && devices.insert(pid).second) events.push_back(process_name(pid, "GPU " + std::to_string(pid - 1)));
    events.push_back({{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", pid},
                      {"tid", gpu ? e.deviceResourceId() : static_cast<int64_t>(e.startThreadId())},
                      {"ts", start - origin}, {"dur", dur}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}, {"slm_profile", {{"source", source}, {"steps", steps}}}};
}

}  // namespace slm::train
