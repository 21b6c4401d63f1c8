// tests/comm/env_test.cpp: read_launch_env understands torchrun, Slurm and mpirun variables;
// which failed starts `slm launch --max-restarts` starts again.
#include <gtest/gtest.h>

#include <cstdlib>

#include "comm/env.h"
#include "comm/launch.h"
#include "util/error.h"

namespace {

const char* kVars[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                       "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE",
                       "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                       "OMPI_COMM_WORLD_LOCAL_SIZE", "SLM_RESTART_COUNT", "SLM_RESTART_CAUSE",
                       "TORCHELASTIC_RESTART_COUNT"};

struct Env : ::testing::Test {
  void SetUp() override {
    for (const char* v : kVars) ::unsetenv(v);
  }
  void TearDown() override { SetUp(); }
  void set(const char* k, const char* v) { ::setenv(k, v, 1); }
};

TEST_F(Env, NothingSetIsOneProcess) {
  slm::comm::LaunchEnv e = slm::comm::read_launch_env();
  EXPECT_EQ(e.world, 1);
  EXPECT_EQ(e.rank, 0);
  EXPECT_EQ(e.source, "none");
}

// A job restarted by `slm launch --max-restarts` or torchrun --max-restarts.
TEST_F(Env, Restarts) {
  EXPECT_EQ(slm::comm::read_launch_env().restart, 0);
  set("TORCHELASTIC_RESTART_COUNT", "2");
  slm::comm::LaunchEnv e = slm::comm::read_launch_env();
  EXPECT_EQ(e.restart, 2);
  EXPECT_EQ(e.restart_cause, "a rank failed");
  set("SLM_RESTART_COUNT", "1"), set("SLM_RESTART_CAUSE", "rank 1 was killed by signal 9");
  e = slm::comm::read_launch_env();
  EXPECT_EQ(e.restart, 1);
  EXPECT_EQ(e.restart_cause, "rank 1 was killed by signal 9");
  set("SLM_RESTART_COUNT", "0");
  EXPECT_EQ(slm::comm::read_launch_env().restart_cause, "");
  set("SLM_RESTART_COUNT", "x");
  EXPECT_THROW(slm::comm::read_launch_env(), slm::UserError);
}

TEST_F(Env, Torchrun) {
  set("RANK", "3"), set("WORLD_SIZE", "8"), set("LOCAL_RANK", "1"), set("LOCAL_WORLD_SIZE", "2");
  set("MASTER_ADDR", "node0"), set("MASTER_PORT", "29400");
  slm::comm::LaunchEnv e = slm::comm::read_launch_env();
  EXPECT_EQ(e.source, "torchrun");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world, 8);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.local_world, 2);
  EXPECT_EQ(e.master_addr, "node0");
  EXPECT_EQ(e.master_port, 29400);
}

TEST_F(Env, Slurm) {
  set("SLURM_PROCID", "5"), set("SLURM_NTASKS", "6"), set("SLURM_LOCALID", "2"),
      set("SLURM_NTASKS_PER_NODE", "3(x2)");
  set("MASTER_ADDR", "n1"), set("MASTER_PORT", "1234");
  slm::comm::LaunchEnv e = slm::comm::read_launch_env();
  EXPECT_EQ(e.source, "slurm");
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.world, 6);
  EXPECT_EQ(e.local_rank, 2);
  EXPECT_EQ(e.local_world, 3);
}

TEST_F(Env, Mpirun) {
  set("OMPI_COMM_WORLD_RANK", "1"), set("OMPI_COMM_WORLD_SIZE", "2"), set("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
      set("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
  set("MASTER_ADDR", "127.0.0.1"), set("MASTER_PORT", "29500");
  slm::comm::LaunchEnv e = slm::comm::read_launch_env();
  EXPECT_EQ(e.source, "mpirun");
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.world, 2);
}

TEST_F(Env, BadValuesAreOneLineErrors) {
  set("RANK", "2"), set("WORLD_SIZE", "2");
  EXPECT_THROW(slm::comm::read_launch_env(), slm::UserError);
  set("RANK", "x");
  EXPECT_THROW(slm::comm::read_launch_env(), slm::UserError);
  set("RANK", "0");
  EXPECT_THROW(slm::comm::read_launch_env(), slm::UserError);  // no MASTER_ADDR
  set("MASTER_ADDR", "h"), set("MASTER_PORT", "70000");
  EXPECT_THROW(slm::comm::read_launch_env(), slm::UserError);
}

// What `slm launch --max-restarts` starts again: a peer's failure (exit 4), an internal error, a
// signal; never an input error (exit 1) or a usage error (exit 2), which would fail again.
TEST(Launch, RestartsWhatAnotherStartCanFix) {
  EXPECT_NE(slm::comm::not_restartable(1).find("input error (exit 1)"), std::string::npos);
  EXPECT_NE(slm::comm::not_restartable(2).find("usage error (exit 2)"), std::string::npos);
  for (int code : {3, slm::kExitJobError, 137, 139}) EXPECT_EQ(slm::comm::not_restartable(code), "") << code;
}

}  // namespace
