// comm/auth.h: the job secret (issue 17). c10d's TCPStore and Gloo accept anyone who reaches the
// port; with a secret, every rank proves at rendezvous that it has it before any process group is
// built: rank 0 publishes a random challenge, each rank takes a fresh attempt number from the store
// and answers HMAC-SHA256(secret, challenge/rank/attempt), rank 0 admits or refuses each answer
// (comm/world.cpp runs that exchange over the store). The answers sit in the store in clear, so each
// is bound to its attempt: a process without the secret that copies a real rank's answer into an
// attempt of its own is refused (the copy proves another attempt), and the real rank is admitted.
// The challenge is new at every rendezvous and an attempt number is used once, so the pair is the
// per-attempt nonce: no answer is valid twice. The
// secret itself never crosses the network, never goes to logs or config dumps. Not encryption:
// Gloo and NCCL traffic is clear text (run cross-site traffic in a VPN, docs/parallel.md), and a
// client that speaks raw TCPStore can still write keys; the secret keeps processes that lack it
// out of the job. Owns: job_secret, new_challenge, job_proof, proof_ok. No torch (OpenSSL's
// libcrypto).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace slm::comm {

// The secret of this job: SLM_JOB_SECRET if set, else the first line of `secret_file` (if given),
// else none. UserError for an unreadable or empty file, or one that others may read (chmod 600).
std::optional<std::string> job_secret(const std::string& secret_file);
std::string new_challenge();  // 32 random bytes, hex
// hex HMAC-SHA256(secret, challenge + "/" + rank + "/" + attempt)
std::string job_proof(const std::string& secret, const std::string& challenge, int rank, int64_t attempt);
bool proof_ok(const std::string& secret, const std::string& challenge, int rank, int64_t attempt,
              const std::string& proof);  // constant time

}  // namespace slm::comm
