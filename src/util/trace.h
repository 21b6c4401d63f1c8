// util/trace.h: a timeline of what one rank did in a few training steps (log.trace_steps), as
// Chrome trace events that Perfetto (ui.perfetto.dev) and chrome://tracing open. Owns:
// set_recording, recording, set_sync, Span, take_events, trace_file_json. Process-wide; with recording off a
// Span costs one branch. Times are the system clock's microseconds, so ranks on one machine (and
// clock-synchronised machines) line up in one view.
#pragma once
#include <chrono>
#include <string>

namespace slm::trace {

// Lanes of a rank's timeline: what computes, what waits on peers, the step as a whole, and the
// collectives inside a forward or backward (tensor parallelism's all-reduces: part of its time).
enum Lane { kCompute = 0, kWait = 1, kStep = 2, kInside = 3 };

void set_recording(bool on);
bool recording();
// Called at each span's start and end while recording (null: none). On a GPU the training loop sets
// it to a device synchronisation, so that a span times the device's work, not the launches (the
// traced steps run a little slower; the others do not).
void set_sync(void (*fn)());

// Records [construction, destruction) as one event named `name` (a literal; with micro >= 0 the
// event is "F 3" or "F 3.1" for chunk >= 1 and carries both as args) when recording.
class Span {
 public:
  explicit Span(const char* name, Lane lane = kCompute, int micro = -1, int chunk = -1, long long step = -1);
  ~Span();
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  const char* name_;
  Lane lane_;
  int micro_, chunk_;
  long long step_;
  double start_us_ = -1;  // < 0: not recording
};

// The events recorded since the last call, as comma-separated JSON objects with pid = `rank`;
// clears them.
std::string take_events(int rank);
// A whole trace file: `events` (take_events' output, possibly several joined by commas) and a
// name for each listed process: {"traceEvents": [...], "displayTimeUnit": "ms"}.
std::string trace_file_json(const std::string& events, int rank, const std::string& process_name);

}  // namespace slm::trace
