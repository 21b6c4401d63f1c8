// comm/health.h: liveness of the ranks, so that a failed collective can say *which* rank is gone.
// Owns: Health. Each rank bumps a counter "hb/<rank>" in the rendezvous store once a second from
// a background thread (its own store connection). When a collective fails or times out,
// lost_ranks() watches the counters of every rank of the job for a few seconds and names the ranks
// that stopped (all of them, not only the failed group's: a lost site is named whole whichever of
// its groups fails first); if the store itself is unreachable, rank 0 (which hosts it) is gone.
#pragma once
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <torch/csrc/distributed/c10d/Store.hpp>

namespace slm::comm {

struct Health {
  Health(const std::string& host, int port, int rank, int world);
  ~Health();
  // A phrase naming the job's lost ranks, e.g. "rank 3" or "ranks 1, 2", or
  // "rank 0 (host of the rendezvous store)"; "no rank (all heartbeats continue)" if none stopped.
  std::string lost_ranks();

  c10::intrusive_ptr<c10d::Store> store;  // this thread's own client connection
  int rank;                   // the job's rank (the launcher's RANK)
  int world;                  // the job's size (the launcher's WORLD_SIZE)
  std::vector<int> job_rank;  // after comm::shrink_world: the job's rank of each renumbered rank
                              // (empty = ranks are the job's)
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread thread;
};

}  // namespace slm::comm
