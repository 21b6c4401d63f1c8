// comm/admission.cpp: see admission.h.
#include "comm/admission.h"

#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <set>
#include <thread>
#include <vector>

#include "comm/auth.h"
#include "util/error.h"

namespace slm::comm {
namespace {

std::string bytes_text(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }
std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

}  // namespace

void admit(c10d::Store& store, const std::string& key, const LaunchEnv& env, const std::optional<std::string>& secret,
           double join_timeout_s, const std::function<double()>& waited, const std::string& address) {
  const std::string where = fmt::format("rendezvous at {}:{}", env.master_addr, env.master_port);
  auto await_key = [&](const std::string& k, const char* what) {
    while (!store.check({k})) {
      if (waited() > join_timeout_s)
        throw JobError(fmt::format("{}: {} within {:.0f} s (dist.join_timeout_s)", where, what, waited()));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return bytes_text(store.get(k));
  };
  if (env.rank == 0) {
    const std::string challenge = secret ? new_challenge() : "none";
    store.set(key + "auth/challenge", bytes_of(challenge));
    if (!secret) return;
    std::vector<bool> in(static_cast<size_t>(env.world), false);
    in[0] = true;
    // Attempts are read as their records appear, in any order: one that took a number and never
    // wrote its record (a process that died) holds up no one.
    std::set<int64_t> pending;
    for (int64_t numbered = 0, admitted = 1; admitted < env.world;) {
      for (const int64_t n = store.add(key + "auth/attempts", 0); numbered < n; ++numbered) pending.insert(numbered);
      bool progress = false;
      for (auto it = pending.begin(); it != pending.end();) {
        const std::string k = key + "auth/attempt/" + std::to_string(*it);
        if (!store.check({k})) {
          ++it;
          continue;
        }
        int rank = -1;
        char proof[129] = {0}, from[64] = {0};
        std::sscanf(bytes_text(store.get(k)).c_str(), "%d %128s %63s", &rank, proof, from);
        std::string verdict = "ok";
        if (rank < 1 || rank >= env.world) verdict = fmt::format("rank {} is not in a job of {} ranks", rank, env.world);
        else if (!proof_ok(*secret, challenge, rank, *it, proof)) verdict = "wrong job secret";
        else if (in[static_cast<size_t>(rank)]) verdict = fmt::format("rank {} is already in the job", rank);
        store.set(key + "auth/verdict/" + std::to_string(*it), bytes_of(verdict));
        if (verdict == "ok") {
          in[static_cast<size_t>(rank)] = true;
          ++admitted;
        } else {
          std::fprintf(stderr, "warning: %s: refused a process at %s claiming rank %d: %s\n", where.c_str(),
                       *from ? from : "an unknown address", rank, verdict.c_str());
        }
        it = pending.erase(it);
        progress = true;
      }
      if (admitted >= env.world) break;
      if (waited() > join_timeout_s)
        throw JobError(fmt::format("{}: {} of {} ranks proved the job secret within {:.0f} s (dist.join_timeout_s)",
                                    where, admitted, env.world, waited()));
      if (!progress) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return;
  }
  const std::string challenge = await_key(key + "auth/challenge", "rank 0 did not open the rendezvous");
  if (challenge == "none") {
    if (secret)
      throw UserError(where + ": rank 0 runs without a job secret but this rank has one; give every rank the same "
                              "SLM_JOB_SECRET or dist.secret_file");
    return;
  }
  const int64_t id = store.add(key + "auth/attempts", 1) - 1;
  store.set(key + "auth/attempt/" + std::to_string(id),
            bytes_of(fmt::format("{} {} {}", env.rank, secret ? job_proof(*secret, challenge, env.rank, id) : "none",
                                 address.empty() ? "-" : address)));
  const std::string verdict = await_key(key + "auth/verdict/" + std::to_string(id), "rank 0 did not admit this rank");
  if (verdict != "ok")
    throw UserError(fmt::format("{}: refused by rank 0: {}{}", where, verdict,
                                secret ? "" : " (this job needs its secret: SLM_JOB_SECRET or dist.secret_file)"));
}

}  // namespace slm::comm
