// comm/auth.cpp: see auth.h.
#include "comm/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fmt/format.h>
#include <fstream>

#include "util/error.h"

namespace slm::comm {
namespace {

std::string hex(const unsigned char* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) out += digits[p[i] >> 4], out += digits[p[i] & 15];
  return out;
}

}  // namespace

std::optional<std::string> job_secret(const std::string& secret_file) {
  if (const char* v = std::getenv("SLM_JOB_SECRET"); v && *v) return std::string(v);
  if (secret_file.empty()) return std::nullopt;
  struct stat st {};
  if (::stat(secret_file.c_str(), &st) != 0)
    throw UserError(fmt::format("dist.secret_file {}: cannot read it", secret_file));
  if (S_ISDIR(st.st_mode))
    throw UserError(fmt::format("dist.secret_file {}: is a directory, not a file", secret_file));
  if (st.st_mode & (S_IRWXG | S_IRWXO))
    throw UserError(fmt::format("dist.secret_file {}: others may read it; chmod 600 {}", secret_file, secret_file));
  std::ifstream in(secret_file);
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();  // written on Windows: the same secret
  if (!in || line.empty())
    throw UserError(fmt::format("dist.secret_file {}: empty (its first line is the secret)", secret_file));
  return line;
}

std::string new_challenge() {
  unsigned char b[32];
  if (RAND_bytes(b, sizeof b) != 1) throw UserError("rendezvous: no random bytes for the job secret's challenge");
  return hex(b, sizeof b);
}

std::string job_proof(const std::string& secret, const std::string& challenge, int rank, int64_t attempt) {
  const std::string msg = challenge + "/" + std::to_string(rank) + "/" + std::to_string(attempt);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), reinterpret_cast<const unsigned char*>(msg.data()),
            msg.size(), out, &len))
    throw UserError("rendezvous: HMAC failed");
  return hex(out, len);
}

bool proof_ok(const std::string& secret, const std::string& challenge, int rank, int64_t attempt,
              const std::string& proof) {
  const std::string want = job_proof(secret, challenge, rank, attempt);
  return proof.size() == want.size() && CRYPTO_memcmp(proof.data(), want.data(), want.size()) == 0;
}

}  // namespace slm::comm
