// comm/world.h: joining the job: rendezvous through a c10d TCPStore hosted by rank 0, the world
// process group (Gloo on CPU, NCCL on GPU), and new subgroups.
// Owns: DistConfig (the [dist] config section), World, init_world, new_group, shrink_world.
// Worked example, 4 ranks on one machine started by `slm launch -n 4` (MASTER_ADDR=127.0.0.1):
// rank 0 listens on MASTER_PORT and waits up to join_timeout_s for ranks 1..3; each builds the
// world Gloo group (keys under "world/"); a subgroup {0,2} is built by ranks 0 and 2 only, under
// its own key prefix.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/env.h"
#include "comm/group.h"
#include "comm/hierarchy.h"

namespace slm::comm {

struct DistConfig {
  std::string backend = "auto";  // auto (nccl on cuda, gloo on cpu) | gloo | nccl
  std::string interface;         // network interface for Gloo/NCCL traffic, e.g. "eth0"; "" = the
                                 // GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME variables, else the
                                 // address MASTER_ADDR is reached by
  double timeout_s = 60;         // a collective that waits longer than this fails (a dead peer)
  double join_timeout_s = 120;   // rendezvous: how long to wait for every rank to arrive
  std::string secret_file;       // the job secret's file (first line; mode 600); SLM_JOB_SECRET
                                 // overrides; none = no secret (comm/auth.h)
  WanOptions wan;                // data-parallel all-reduce across slow links (comm/hierarchy.h)
};

struct World {
  LaunchEnv env;
  std::string backend;  // resolved: "gloo" | "nccl"
  Group world;
  std::shared_ptr<void> store;  // the rendezvous store (c10d::Store), for new_group
  DistConfig cfg;  // as joined: new groups take its backend and timeouts (WAN options are passed
                  // where gradients are reduced: parallel/plan_groups.h, comm/probe.h)
  std::map<std::string, int> groups_made;  // per group name+ranks: how many so far (unique store keys)
  std::vector<int> job_ranks;  // after shrink_world: the launcher's rank of each rank (empty = the same)
};

// Validates cfg, reads the launch environment, and (world > 1) performs the rendezvous. UserError
// with one line when a peer never arrives, the store is unreachable, or a value is wrong.
World init_world(const DistConfig& cfg, const std::string& device);
// A process group of the given global ranks (ascending). Collective over those members only;
// others must not call it. `name` is used in messages ("dp", "tp", ...). A group of every rank
// shares the world's connections unless `own_connections` (pipeline point-to-point traffic gets
// its own, so that its byte count and its tags stay apart from the world's collectives).
Group new_group(World& w, const std::string& name, const std::vector<int>& ranks, bool own_connections = false);
// The ranks `keep` (ascending, rank 0 among them: it hosts the store) as a job of their own, for
// a plan that leaves ranks out: renumbered 0..keep.size()-1 in that order, with their own world
// group and store keys; failures still name the job's ranks. Collective over `keep` only; the
// other ranks may exit. w stays usable for nothing but its store.
World shrink_world(World& w, const std::vector<int>& keep);

}  // namespace slm::comm
