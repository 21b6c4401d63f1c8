// util/trace.cpp: see trace.h.
#include "util/trace.h"

#include <algorithm>
#include <atomic>
#include <fmt/format.h>
#include <mutex>
#include <vector>

namespace slm::trace {
namespace {
struct Event {
  const char* name;
  Lane lane;
  int micro, chunk;
  long long step;
  double start_us, dur_us;
};
std::atomic<bool> g_on{false};
void (*g_sync)() = nullptr;
std::mutex g_mutex;  // spans may end on another thread (a background checkpoint); cheap while rare
std::vector<Event> g_events;

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

void set_recording(bool on) { g_on.store(on, std::memory_order_relaxed); }
void set_sync(void (*fn)()) { g_sync = fn; }
bool recording() { return g_on.load(std::memory_order_relaxed); }

Span::Span(const char* name, Lane lane, int micro, int chunk, long long step)
    : name_(name), lane_(lane), micro_(micro), chunk_(chunk), step_(step) {
  if (!recording()) return;
  if (g_sync) g_sync();
  start_us_ = now_us();
}

Span::~Span() {
  if (start_us_ < 0) return;
  if (g_sync) g_sync();
  const double end = now_us();
  std::lock_guard<std::mutex> lock(g_mutex);
  g_events.push_back({name_, lane_, micro_, chunk_, step_, start_us_, end - start_us_});
}

std::string take_events(int rank) {
  std::vector<Event> events;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    events.swap(g_events);
  }
  std::string out;
  for (const Event& e : events) {
    std::string name = e.name, args;
    if (e.micro >= 0) {
      name += e.chunk > 0 ? fmt::format(" {}.{}", e.micro, e.chunk) : fmt::format(" {}", e.micro);
      args = fmt::format(",\"args\":{{\"micro\":{},\"chunk\":{}}}", e.micro, std::max(0, e.chunk));
    } else if (e.step >= 0) {
      name += fmt::format(" {}", e.step);
      args = fmt::format(",\"args\":{{\"step\":{}}}", e.step);
    }
    if (!out.empty()) out += ",\n";
    out += fmt::format("{{\"name\":\"{}\",\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{:.1f},\"dur\":{:.1f}{}}}", name,
                       rank, static_cast<int>(e.lane), e.start_us, e.dur_us, args);
  }
  return out;
}

std::string trace_file_json(const std::string& events, int rank, const std::string& process_name) {
  std::string meta = fmt::format("{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{},\"args\":{{\"name\":\"{}\"}}}}",
                                 rank, process_name);
  const char* lanes[] = {"compute", "waits on peers", "step", "collectives inside compute"};
  for (int l = 0; l < 4; ++l)
    meta += fmt::format(",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":\"{}\"}}}}",
                        rank, l, lanes[l]);
  return "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n" + meta + (events.empty() ? "" : ",\n" + events) + "\n]}\n";
}

}  // namespace slm::trace
