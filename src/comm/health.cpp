// comm/health.cpp: see health.h.
#include "comm/health.h"

#include <chrono>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>

#include "comm/compat.h"

namespace slm::comm {
namespace {
constexpr auto kBeat = std::chrono::milliseconds(1000);

c10::intrusive_ptr<c10d::Store> connect(const std::string& host, int port) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(port);
  o.isServer = false;
  o.waitWorkers = false;
  o.timeout = std::chrono::seconds(10);
  return c10::make_intrusive<c10d::TCPStore>(host, o);
}
}  // namespace

Health::Health(const std::string& host, int port, int rank_, int world_) : rank(rank_), world(world_) {
  store = connect(host, port);
  store->add(fmt::format("hb/{}", rank), 1);
  thread = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu);
    while (!cv.wait_for(lock, kBeat, [this] { return stop; })) {
      try {
        store->add(fmt::format("hb/{}", rank), 1);
      } catch (...) {
        return;  // the store is gone; lost_ranks() reports it
      }
    }
  });
}

Health::~Health() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
  }
  cv.notify_all();
  if (thread.joinable()) thread.join();
}

std::string Health::lost_ranks() {
  std::map<int, int64_t> before;
  std::vector<int> job = job_rank;  // the job's ranks still in it: heartbeats and messages use them
  if (job.empty())
    for (int r = 0; r < world; ++r) job.push_back(r);
  try {
    for (int r : job) before[r] = store->add(fmt::format("hb/{}", r), 0);
    std::this_thread::sleep_for(kBeat * 3);
    std::vector<int> lost;
    for (int r : job)
      if (r != rank && store->add(fmt::format("hb/{}", r), 0) == before[r]) lost.push_back(r);
    if (lost.empty()) return "no rank (all heartbeats continue)";
    return fmt::format("{} {}", lost.size() == 1 ? "rank" : "ranks", fmt::join(lost, ", "));
  } catch (const std::exception&) {
    return "rank 0 (host of the rendezvous store)";
  }
}

}  // namespace slm::comm
