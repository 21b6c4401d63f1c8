// tests/host/hardware_test.cpp: the device's measured GEMM peak (MFU's denominator), cached per
// build and kernels revision, and only where the process had its threads' time.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/version.h>

#include "host/cpu_share.h"
#include "host/hardware.h"
#include "host/runtime.h"
#include "model/kernel_threads.h"
#include "test_util.h"
#include "util/files.h"

// The measured GEMM peak (MFU's denominator) is cached per CPU, thread count, runtime settings,
// build and kernels revision: LibTorch 1.13 with OpenBLAS and 2.x with MKL time the same CPU
// differently.
TEST(Peak, CachedPerBuild) {
  const slm::test::TempHome home("peak");
  at::set_num_threads(1);  // as its name says; CI runs another test beside this one
  const slm::host::DeviceInfo first = slm::host::describe_device("cpu", "fp32", 1, 0, 0);
  if (first.peak_source.find("busy") != std::string::npos)  // the other test took this one's core too
    GTEST_SKIP() << first.peak_source;
  EXPECT_EQ(first.peak_source, "measured now");
  EXPECT_GT(first.peak_flops, 0);
  const std::string cached = slm::read_file(home.dir + "/.cache/slmtrain/peak.json");
  EXPECT_NE(cached.find(std::string("LibTorch ") + TORCH_VERSION + ", BLAS "), std::string::npos) << cached;
  EXPECT_NE(cached.find(", slm kernels r" + std::to_string(slm::model::kKernelsRevision)), std::string::npos) << cached;
  const slm::host::DeviceInfo again = slm::host::describe_device("cpu", "fp32", 1, 0, 0);
  EXPECT_EQ(again.peak_source, "cached");
  EXPECT_EQ(again.peak_flops, first.peak_flops);
}

// The peak's GEMM grows from 256 while the next size would take at most ~0.25 s: a fast path is
// timed at the largest size (2048 on a CPU), a slow one (bf16 through ATen's reference GEMM on a
// CPU without bf16 instructions: minutes at 2048) at a small one.
TEST(Peak, GemmSizeStopsBeforeASlowMatmul) {
  using slm::host::next_gemm_size;
  EXPECT_EQ(next_gemm_size(256, 0.0004, 2048), 512);
  EXPECT_EQ(next_gemm_size(1024, 0.021, 2048), 2048);  // fp32 on 2 EPYC cores: 0.17 s at 2048
  EXPECT_EQ(next_gemm_size(2048, 0.17, 2048), 0);      // the largest size
  EXPECT_EQ(next_gemm_size(256, 0.033, 2048), 0);      // ~1 GFLOP/s: 0.27 s at 512
  EXPECT_EQ(next_gemm_size(4096, 0.0002, 8192), 8192);
}

// The timed matmuls: at least 5 however slow, and for ~2 s however fast (at most 1000), so that
// the best of them is a shared host's fast phase, not whichever phase a few matmuls met.
TEST(Peak, GemmRepeatsCoverTwoSeconds) {
  using slm::host::more_gemm_repeats;
  EXPECT_TRUE(more_gemm_repeats(0, 0.0));
  EXPECT_TRUE(more_gemm_repeats(4, 3.0)) << "5 however slow";
  EXPECT_FALSE(more_gemm_repeats(5, 3.0));
  EXPECT_TRUE(more_gemm_repeats(40, 0.5)) << "a fast GEMM is timed for ~2 s";
  EXPECT_TRUE(more_gemm_repeats(200, 1.9));
  EXPECT_FALSE(more_gemm_repeats(200, 2.0));
  EXPECT_FALSE(more_gemm_repeats(1000, 0.8)) << "at most 1000 (a GPU's small GEMMs)";
}

// Which peak a run divides by, and what the cache keeps: the higher of the cached and a new
// timing, and a timing only from a process that had its threads' time (one taken beside another
// process's load is low, and every later run would divide by it: MFU 126-138% on a 2-core EPYC
// whose bf16 peak had been cached at 0.219 TFLOP/s while it measures 0.39-0.42 alone).
TEST(Peak, TheCacheKeepsTheHigherOfTimingsTakenAlone) {
  using slm::host::choose_peak;
  const slm::host::PeakChoice fresh = choose_peak(std::nullopt, {4e11, 0.98});
  EXPECT_EQ(fresh.flops, 4e11);
  EXPECT_TRUE(fresh.store);
  EXPECT_EQ(fresh.source, "measured now");
  const slm::host::PeakChoice busy = choose_peak(std::nullopt, {2.2e11, 0.6});
  EXPECT_EQ(busy.flops, 2.2e11);  // this run's best number, not kept
  EXPECT_FALSE(busy.store);
  EXPECT_EQ(busy.source, "measured now on a busy machine (60% of its threads' time): not cached");
  const slm::host::PeakChoice low_cache = choose_peak(2.2e11, {4e11, 0.99});
  EXPECT_EQ(low_cache.flops, 4e11);
  EXPECT_TRUE(low_cache.store);
  EXPECT_EQ(low_cache.source, "measured now; the cached 0.220 was lower");
  const slm::host::PeakChoice high_cache = choose_peak(4e11, {3.9e11, 0.99});
  EXPECT_EQ(high_cache.flops, 4e11);
  EXPECT_FALSE(high_cache.store);
  EXPECT_EQ(high_cache.source, "cached; 0.390 measured now");
  const slm::host::PeakChoice busy_above_cache = choose_peak(2e11, {3e11, 0.5});
  EXPECT_EQ(busy_above_cache.flops, 3e11);
  EXPECT_FALSE(busy_above_cache.store);
}

// A process's share of its threads' time; what it lacked while the CPUs sat idle counts as had.
TEST(Peak, CpuShareTellsAnotherJobFromThreadsWaiting) {
  using slm::host::cpu_share;
  using slm::host::CpuClock;
  const CpuClock start{100.0, 5.0, 1000.0};
  EXPECT_NEAR(cpu_share(start, {101.0, 6.96, 1000.0}, 2), 0.98, 1e-12);  // alone
  EXPECT_NEAR(cpu_share(start, {101.0, 6.2, 1000.0}, 2), 0.6, 1e-12);    // a busy loop beside it
  EXPECT_EQ(cpu_share(start, {101.0, 37.0, 1020.0}, 64), 1.0);           // 64 threads, half of them waiting
  EXPECT_NEAR(cpu_share(start, {101.0, 37.0, 1010.0}, 64), 0.5, 1e-12);  // ... with other jobs on most cores
  EXPECT_EQ(cpu_share(start, start, 2), 1.0);                            // nothing timed
}

// Ranks that timed together on one machine, judged as one: their threads held to its CPUs.
TEST(Peak, RanksShareJudgesAMachinesRanksTogether) {
  using slm::host::ranks_share;
  const slm::host::CpuClock start{100.0, 5.0, 1000.0}, end{102.0, 9.0, 1000.0};  // this rank's own CPU not used
  EXPECT_NEAR(ranks_share(start, end, 3.92, 4, 2), 0.98, 1e-12);  // 4 one-thread ranks on 2 cores, alone
  EXPECT_NEAR(ranks_share(start, end, 3.2, 4, 2), 0.8, 1e-12);    // a busy loop beside them (4 of 5 threads)
  EXPECT_NEAR(ranks_share(start, end, 3.2, 2, 8), 0.8, 1e-12);    // 2 ranks on 8 CPUs: held to their threads
  EXPECT_EQ(ranks_share(start, {102.0, 9.0, 1004.0}, 3.2, 4, 8), 1.0);  // the lack was idle CPUs (a quota)
  EXPECT_NEAR(ranks_share(start, end, 2.0, 4, 0), 1.0, 1e-12);    // no CPU count: at least one
}

// Processes that keep every core busy until the object goes.
struct BusyCores {
  std::vector<pid_t> pids;
  explicit BusyCores(int n) {
    for (int i = 0; i < n; ++i)
      if (const pid_t p = ::fork(); p == 0) {
        volatile uint64_t x = 0;
        for (;;) x = x + 1;
      } else {
        pids.push_back(p);
      }
  }
  ~BusyCores() {
    for (pid_t p : pids) ::kill(p, SIGKILL), ::waitpid(p, nullptr, 0);
  }
};

// Two busy processes per core beside it: the timing is this run's, and the cache stays empty.
TEST(Peak, NotCachedFromABusyMachine) {
  const slm::test::TempHome home("peak_busy");
  slm::host::DeviceInfo d;
  {
    const BusyCores busy(2 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    d = slm::host::describe_device("cpu", "fp32", 1, 0, 0);
  }
  EXPECT_NE(d.peak_source.find("on a busy machine"), std::string::npos) << d.peak_source;
  EXPECT_GT(d.peak_flops, 0);
  EXPECT_FALSE(std::filesystem::exists(home.dir + "/.cache/slmtrain/peak.json"));
}

// `slm doctor` measures again and keeps the higher: a cached peak above the timing stays.
TEST(Peak, RefreshKeepsAHigherCachedPeak) {
  const slm::test::TempHome home("peak_refresh");
  const std::string key = slm::host::cpu_model_name() + " x1 threads fp32 | " + slm::host::measurement_context() +
                          " | measured alone";
  slm::test::write(home.dir + "/.cache/slmtrain/peak.json", nlohmann::json{{key, 1e18}}.dump());
  EXPECT_EQ(slm::host::describe_device("cpu", "fp32", 1, 0, 0).peak_source, "cached");  // read as the key it wrote
  const slm::host::DeviceInfo d = slm::host::describe_device("cpu", "fp32", 1, 0, 0, slm::host::PeakCache::kRefresh);
  EXPECT_EQ(d.peak_flops, 1e18);
  EXPECT_EQ(d.peak_source.rfind("cached; ", 0), 0u) << d.peak_source;
}
