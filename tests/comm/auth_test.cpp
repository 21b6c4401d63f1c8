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
  // python3 -c "import hmac, hashlib; print(hmac.new(b'key', b'abc/3', hashlib.sha256).hexdigest())"
  EXPECT_EQ(job_proof("key", "abc", 3), "7b61ad8b2d0d43d6edfe111d4e19c74d5ec9f29ab8f322391304d02dd79403b8");
  EXPECT_TRUE(proof_ok("key", "abc", 3, job_proof("key", "abc", 3)));
  EXPECT_FALSE(proof_ok("key", "abc", 2, job_proof("key", "abc", 3)));   // another rank's proof
  EXPECT_FALSE(proof_ok("kex", "abc", 3, job_proof("key", "abc", 3)));   // another secret
  EXPECT_FALSE(proof_ok("key", "abd", 3, job_proof("key", "abc", 3)));   // an old challenge
  EXPECT_FALSE(proof_ok("key", "abc", 3, "none"));
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
  std::filesystem::remove(f);
  EXPECT_THROW(job_secret(f), slm::UserError);
}
