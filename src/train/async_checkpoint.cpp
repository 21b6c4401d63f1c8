// train/async_checkpoint.cpp: see async_checkpoint.h.
#include "train/async_checkpoint.h"

#include <chrono>

#include "comm/collectives.h"

namespace slm::train {

void start_async(AsyncCheckpoint& a, const Trainer& t, const std::string& run_dir, int64_t keep) {
  a.snap = snapshot_checkpoint(t, run_dir, keep, /*solo=*/false, /*copy=*/true);
  a.result.reset();
  a.writing = std::async(std::launch::async, [s = &*a.snap] { return write_snapshot(*s); });
}

std::vector<double> async_status(AsyncCheckpoint& a) {
  if (!a.snap) return {0, 0};
  if (!a.result && a.writing.wait_for(std::chrono::seconds(0)) == std::future_status::ready) a.result = a.writing.get();
  if (!a.result) return {0, 0};
  return a.result->empty() ? std::vector<double>{1, 0} : std::vector<double>{0, 1};
}

std::optional<std::string> on_agreed(AsyncCheckpoint& a, double written, double failed, int ranks) {
  if (!a.snap) return std::nullopt;
  if (failed > 0) {
    if (!a.result) a.result = a.writing.get();  // this rank's writer must be done with the snapshot
    const std::string why = *a.result;
    CheckpointSnapshot s = std::move(*a.snap);
    a.snap.reset();
    throw save_failed(s, why);
  }
  if (written < ranks) return std::nullopt;
  CheckpointSnapshot s = std::move(*a.snap);
  a.snap.reset();
  if (const std::string why = finish_checkpoint(s); !why.empty()) throw save_failed(s, why);
  return s.path;
}

std::optional<std::string> wait_async(AsyncCheckpoint& a, const Trainer& t) {
  if (!a.snap) return std::nullopt;
  if (!a.result) a.result = a.writing.get();
  const std::vector<double> mine = async_status(a);
  const std::vector<double> all = comm::sum(mine, t.groups.world);
  return on_agreed(a, all[0], all[1], t.groups.world.size);
}

}  // namespace slm::train
