// tests/comm/auth_test.cpp: the job secret: proofs (HMAC-SHA256, checked against Python's hmac),
// their check, challenges, and where the secret comes from (environment, file, refusals).
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "comm/auth.h"
#include "util/error.h"

using namespace slm::comm;

TEST(Auth, ProofIsHmacSha256) {
  // python3 -c "import hmac, hashlib; print(hmac.new(b'key', b'abc/3/7', hashlib.sha256).hexdigest())"
  EXPECT_EQ(job_proof("key", "abc", 3, 7), "c201b1e010ab1e752485746f6307e2b2337f538e16bc00a863cdcda82a5de54a");
  EXPECT_TRUE(proof_ok("key", "abc", 3, 7, job_proof("key", "abc", 3, 7)));
  EXPECT_FALSE(proof_ok("key", "abc", 2, 7, job_proof("key", "abc", 3, 7)));  // another rank's proof
  EXPECT_FALSE(proof_ok("kex", "abc", 3, 7, job_proof("key", "abc", 3, 7)));  // another secret
  EXPECT_FALSE(proof_ok("key", "abd", 3, 7, job_proof("key", "abc", 3, 7)));  // an old challenge
  // A real rank's proof copied into another attempt (a replay by a process without the secret).
  EXPECT_FALSE(proof_ok("key", "abc", 3, 6, job_proof("key", "abc", 3, 7)));
  EXPECT_FALSE(proof_ok("key", "abc", 3, 7, "none"));
  const std::string c = new_challenge();
  EXPECT_EQ(c.size(), 64u);
  EXPECT_NE(c, new_challenge());
}

TEST(Auth, WhereTheSecretComesFrom) {
  ::unsetenv("SLM_JOB_SECRET");
  EXPECT_FALSE(job_secret("").has_value());
  const std::string f = (std::filesystem::temp_directory_path() / ("slm_secret_" + std::to_string(::getpid()))).string();
  std::ofstream(f) << "s3cret\nsecond line\n";
  ::chmod(f.c_str(), 0600);
  EXPECT_EQ(job_secret(f).value(), "s3cret");
  ::setenv("SLM_JOB_SECRET", "from-env", 1);
  EXPECT_EQ(job_secret(f).value(), "from-env");
  ::unsetenv("SLM_JOB_SECRET");
  ::chmod(f.c_str(), 0644);
  try {
    job_secret(f);
    FAIL() << "a world-readable secret file was accepted";
  } catch (const slm::UserError& e) {
    EXPECT_EQ(std::string(e.what()), "dist.secret_file " + f + ": others may read it; chmod 600 " + f);
  }
  std::ofstream(f) << "";
  ::chmod(f.c_str(), 0600);
  EXPECT_THROW(job_secret(f), slm::UserError);
  std::ofstream(f) << "s3cret\r\nsecond line\r\n";  // written on Windows: the same secret
  EXPECT_EQ(job_secret(f).value(), "s3cret");
  std::ofstream(f) << "\r\n";
  EXPECT_THROW(job_secret(f), slm::UserError);
  std::filesystem::remove(f);
  EXPECT_THROW(job_secret(f), slm::UserError);
  std::filesystem::create_directory(f);
  ::chmod(f.c_str(), 0700);
  try {
    job_secret(f);
    FAIL() << "a directory was read as an empty secret file";
  } catch (const slm::UserError& e) {
    EXPECT_EQ(std::string(e.what()), "dist.secret_file " + f + ": is a directory, not a file");
  }
  std::filesystem::remove(f);
}
