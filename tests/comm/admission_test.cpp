// tests/comm/admission_test.cpp: the job secret's admission at rendezvous, on an in-memory store,
// with an intruder that has no secret but reads the store: it copies the real rank 1's proof into an
// attempt of its own, numbered before the real one (so rank 0 reads the copy first). Each proof is
// bound to its attempt, so the copy is refused as a wrong secret and the real rank 1 is admitted.
// (Before, rank 0 admitted the copy as rank 1 and refused the real one: "rank 1 is already in".)
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <chrono>
#include <fmt/format.h>
#include <thread>

#include "comm/admission.h"
#include "comm/auth.h"

namespace slm::comm {
namespace {

std::string text(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }
std::vector<uint8_t> bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

TEST(Admission, ACopiedProofIsRefusedAndTheRealRankAdmitted) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  const std::string key = "slm/join0.0/", secret = "correct-horse";
  LaunchEnv env;
  env.rank = 0, env.world = 3, env.master_addr = "127.0.0.1", env.master_port = 29000;
  const auto start = std::chrono::steady_clock::now();
  const auto waited = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::thread rank0([&] { admit(*store, key, env, secret, 20, waited, ""); });
  store->wait({key + "auth/challenge"});
  const std::string challenge = text(store->get(key + "auth/challenge"));
  const int64_t intruder = store->add(key + "auth/attempts", 1) - 1;  // taken first: read first
  const int64_t real = store->add(key + "auth/attempts", 1) - 1;
  const std::string real_record = fmt::format("1 {} 10.0.0.2", job_proof(secret, challenge, 1, real));
  // Both records are in place before rank 0 looks again: it reads them in attempt order.
  store->set(key + "auth/attempt/" + std::to_string(intruder), bytes(real_record));  // the copy
  store->set(key + "auth/attempt/" + std::to_string(real), bytes(real_record));
  store->wait({key + "auth/verdict/" + std::to_string(intruder), key + "auth/verdict/" + std::to_string(real)});
  EXPECT_EQ(text(store->get(key + "auth/verdict/" + std::to_string(intruder))), "wrong job secret");
  EXPECT_EQ(text(store->get(key + "auth/verdict/" + std::to_string(real))), "ok");
  // Rank 2 with the secret completes the job; rank 0 returns.
  const int64_t third = store->add(key + "auth/attempts", 1) - 1;
  store->set(key + "auth/attempt/" + std::to_string(third),
             bytes(fmt::format("2 {} 10.0.0.3", job_proof(secret, challenge, 2, third))));
  rank0.join();
  EXPECT_EQ(text(store->get(key + "auth/verdict/" + std::to_string(third))), "ok");
}

}  // namespace
}  // namespace slm::comm
