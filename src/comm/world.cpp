// comm/world.cpp: see world.h.
#include "comm/world.h"

#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <thread>
#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "comm/admission.h"
#include "comm/auth.h"
#include "comm/backend.h"
#include "comm/compat.h"
#include "comm/health.h"
#include "comm/reach.h"
#include "util/error.h"
#include "util/wait_time.h"

namespace slm::comm {
namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

c10::intrusive_ptr<c10d::Store>& store_of(World& w) {
  return *static_cast<c10::intrusive_ptr<c10d::Store>*>(w.store.get());
}

std::string resolve_interface(const DistConfig& cfg, const std::string& backend) {
  if (!cfg.interface.empty()) return cfg.interface;
  const char* v = std::getenv(backend == "nccl" ? "NCCL_SOCKET_IFNAME" : "GLOO_SOCKET_IFNAME");
  return v ? v : "";
}

std::shared_ptr<Backend> make_backend(World& w, const std::string& prefix, int rank, int size,
                                      const DistConfig& cfg) {
  auto store = c10::make_intrusive<c10d::PrefixStore>(prefix, store_of(w));
  auto timeout = wait_ms(cfg.timeout_s);
  auto b = std::make_shared<Backend>();
  b->kind = w.backend;
  if (w.backend == "nccl") {
#ifdef USE_C10D_NCCL
    std::string iface = resolve_interface(cfg, "nccl");
    if (!iface.empty()) ::setenv("NCCL_SOCKET_IFNAME", iface.c_str(), 1);
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = timeout;
    b->pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, opts);
#else
    throw UserError("dist: backend nccl: this LibTorch was built without NCCL");
#endif
    return b;
  }
  auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
  std::string iface = resolve_interface(cfg, "gloo");
  in_addr a{};
  bool loopback = w.env.master_addr == "localhost" ||
                  (::inet_pton(AF_INET, w.env.master_addr.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127);
  try {
    if (!iface.empty()) opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(iface));
    else if (loopback) opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    else if (std::string local = local_address_towards(w.env.master_addr); !local.empty())
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(local));
    else opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
  } catch (const std::exception& e) {
    throw UserError(fmt::format("dist: cannot use network interface '{}': {}", iface, first_line(e.what())));
  }
  opts->threads = 2;
  try {
    b->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, opts);
  } catch (const std::exception& e) {
    throw JobError(fmt::format("rendezvous at {}:{}: the {} ranks of group {} did not all connect "
                                "within {:.0f} s ({})",
                                w.env.master_addr, w.env.master_port, size, prefix.substr(0, prefix.size() - 1),
                                cfg.join_timeout_s, first_line(e.what())));
  }
  return b;
}

std::string bytes_text(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }
std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

// Every rank counts itself in on the store and states its WORLD_SIZE; each waits until the count
// reaches its world size, comparing its WORLD_SIZE with rank 0's (and rank 0 with everyone's) as
// soon as they are there. So a peer that never arrives, or ranks launched with different world
// sizes, fail in one line within join_timeout_s, before any process group is built. Rank 0 then
// marks the rendezvous done, and a stray process that arrives later (another job on the same port)
// is refused in one line instead of waiting for a job that will never count it in.
void await_ranks(c10d::Store& store, const LaunchEnv& env, const std::optional<std::string>& secret,
                 double join_timeout_s, std::chrono::steady_clock::time_point start) {
  static int rendezvous = 0;  // a process may build several worlds in turn; all ranks in the same order
  const char* restart = std::getenv("TORCHELASTIC_RESTART_COUNT");  // torchrun's store outlives a restart
  const std::string key = fmt::format("slm/join{}.{}/", restart ? restart : "0", rendezvous++);
  const auto waited = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  // A process that reaches the store of a job whose ranks have all joined (a second job given the
  // same MASTER_ADDR:MASTER_PORT) is refused at once, before it writes anything there.
  if (env.rank != 0 && store.check({key + "done"}))
    throw UserError(fmt::format("rendezvous at {}:{}: a job already runs there (all its ranks have joined); give this "
                                "job another MASTER_PORT (slm launch --master HOST:PORT)",
                                env.master_addr, env.master_port));
  admit(store, key, env, secret, join_timeout_s, waited, env.rank == 0 ? "" : local_address_towards(env.master_addr));
  store.set(key + "world/" + std::to_string(env.rank), bytes_of(std::to_string(env.world)));
  store.add(key + "count", 1);
  auto world_of = [&](int r) -> std::optional<int> {
    const std::string k = key + "world/" + std::to_string(r);
    if (!store.check({k})) return std::nullopt;
    return std::stoi(bytes_text(store.get(k)));
  };
  for (;;) {
    const int64_t n = store.add(key + "count", 0);
    for (int r = 0; r < (env.rank == 0 ? static_cast<int>(std::min<int64_t>(n, env.world)) : 1); ++r)
      if (const auto ws = world_of(r); ws && *ws != env.world)
        throw UserError(fmt::format("rendezvous at {}:{}: ranks disagree on the world size: rank {} has WORLD_SIZE "
                                    "{}, rank {} has {} (start every rank with the same WORLD_SIZE)",
                                    env.master_addr, env.master_port, r, *ws, env.rank, env.world));
    if (n >= env.world) {
      if (env.rank == 0) store.set(key + "done", bytes_of("1"));
      return;
    }
    if (waited() > join_timeout_s)
      throw JobError(fmt::format("rendezvous at {}:{}: {} of {} ranks arrived within {:.0f} s (dist.join_timeout_s); "
                                  "start the others with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE ({} variables)",
                                  env.master_addr, env.master_port, n, env.world, waited(), env.source));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

World init_world(const DistConfig& cfg, const std::string& device) {
  if (cfg.backend != "auto" && cfg.backend != "gloo" && cfg.backend != "nccl")
    throw UserError(fmt::format("dist: backend '{}' is not auto, gloo or nccl", cfg.backend));
  if (cfg.timeout_s <= 0 || cfg.join_timeout_s <= 0)
    throw UserError("dist: timeout_s and join_timeout_s must be positive");
  validate(cfg.wan);
  const std::optional<std::string> secret = job_secret(cfg.secret_file);
  World w;
  w.env = read_launch_env();
  w.cfg = cfg;
  w.backend = cfg.backend == "auto" ? (device == "cuda" ? "nccl" : "gloo") : cfg.backend;
  if (w.backend == "nccl" && device != "cuda")
    throw UserError("dist: backend nccl needs system.device = cuda");
  w.world.rank = w.env.rank;
  w.world.size = w.env.world;
  w.world.ranks.clear();
  for (int r = 0; r < w.env.world; ++r) w.world.ranks.push_back(r);
  if (w.env.world == 1) return w;

  c10d::TCPStoreOptions o;
  o.port = static_cast<uint16_t>(w.env.master_port);
  // torchrun's agent may host the store itself (TORCHELASTIC_USE_AGENT_STORE): then every rank,
  // rank 0 included, is a client of it.
  const char* agent_store = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  const bool use_agent_store = agent_store && std::string(agent_store) == "True";
  if (use_agent_store && !compat::kUsesAgentStore)
    throw UserError(fmt::format("rendezvous: torchrun's agent hosts the store (TORCHELASTIC_USE_AGENT_STORE=True), which "
                                "this LibTorch {}.{} build cannot use (its requests hang); start with `slm launch`, "
                                "Slurm or mpirun, or build against PyPI's torch (SLM_TORCH=pip scripts/setup.sh)",
                                TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR));
  o.isServer = w.env.rank == 0 && !use_agent_store;
  o.numWorkers = static_cast<size_t>(w.env.world);
  o.waitWorkers = false;  // await_ranks waits, with messages that say who is missing
  o.timeout = wait_ms(cfg.join_timeout_s);
  const auto start = std::chrono::steady_clock::now();
  const auto failed = [&](const std::string& what) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string who = o.isServer ? "rank 0 could not open the store"
                                       : fmt::format("rank {} of {} could not reach {}", w.env.rank, w.env.world,
                                                     use_agent_store ? "torchrun's agent store" : "rank 0's store");
    return JobError(fmt::format("rendezvous at {}:{} failed after {:.0f} s: {} ({}, from {})", w.env.master_addr,
                                w.env.master_port, s, who, what, w.env.source));
  };
  if (!o.isServer && !await_listener(w.env.master_addr, w.env.master_port, cfg.join_timeout_s))
    throw failed("nothing accepted connections there");
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(w.env.master_addr, o);
  } catch (const std::exception& e) {
    const std::string what = first_line(e.what());
    if (o.isServer && (what.find("ddress already in use") != std::string::npos || what.find("errno: 98") != std::string::npos))
      throw UserError(fmt::format("rendezvous: port {} on {} is already in use (another job?); choose another "
                                  "MASTER_PORT", w.env.master_port, w.env.master_addr));
    throw failed(what);
  }
  store->setTimeout(wait_ms(cfg.join_timeout_s));
  await_ranks(*store, w.env, secret, cfg.join_timeout_s, start);
  w.store = std::make_shared<c10::intrusive_ptr<c10d::Store>>(store);
  auto health = std::make_shared<Health>(w.env.master_addr, w.env.master_port, w.env.rank, w.env.world);
  w.world.backend = make_backend(w, "world/", w.env.rank, w.env.world, cfg);
  w.world.backend->health = health;
  return w;
}

Group new_group(World& w, const std::string& name, const std::vector<int>& ranks, bool own_connections) {
  Group g;
  g.name = name;
  g.ranks = ranks;
  g.size = static_cast<int>(ranks.size());
  g.rank = -1;
  for (int i = 0; i < g.size; ++i)
    if (ranks[static_cast<size_t>(i)] == w.env.rank) g.rank = i;
  if (g.rank < 0) throw std::logic_error("new_group: this rank is not a member of group " + name);
  if (g.size == 1) return g;
  if (g.size == w.world.size && !own_connections) {  // the world under another name: share its connections
    g.backend = w.world.backend;
    return g;
  }
  // The same members may form several groups (channels, a group rebuilt): a counter keeps their
  // store keys apart; members create groups in the same order, so their counters agree.
  const std::string key = fmt::format("{}/{}", name, fmt::join(ranks, ","));
  const int nth = w.groups_made[key]++;
  g.backend = make_backend(w, nth == 0 ? key + "/" : fmt::format("{}#{}/", key, nth), g.rank, g.size, w.cfg);
  g.backend->health = w.world.backend->health;
  return g;
}

World shrink_world(World& w, const std::vector<int>& keep) {
  const auto me = std::find(keep.begin(), keep.end(), w.env.rank);
  if (keep.empty() || keep[0] != 0 || me == keep.end() || !std::is_sorted(keep.begin(), keep.end()))
    throw std::logic_error("shrink_world: keep must be ascending, start at rank 0 and hold this rank");
  World s;
  s.env = w.env, s.backend = w.backend, s.cfg = w.cfg;
  s.job_ranks = keep;
  s.env.rank = static_cast<int>(me - keep.begin());
  s.env.world = static_cast<int>(keep.size());
  s.world.rank = s.env.rank, s.world.size = s.env.world;
  for (int r = 0; r < s.env.world; ++r) s.world.ranks.push_back(r);
  if (s.env.world == 1) return s;
  s.store = std::make_shared<c10::intrusive_ptr<c10d::Store>>(
      c10::make_intrusive<c10d::PrefixStore>(fmt::format("kept/{}/", fmt::join(keep, ",")), store_of(w)));
  s.world.backend = make_backend(s, "world/", s.env.rank, s.env.world, s.cfg);
  s.world.backend->health = w.world.backend->health;
  s.world.backend->health->job_rank = keep;
  return s;
}

}  // namespace slm::comm
