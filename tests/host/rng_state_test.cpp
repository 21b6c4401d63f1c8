// tests/host/rng_state_test.cpp: a measurement leaves the run's random streams as they were, so
// that dropout's masks do not depend on whether the GEMM peak or the precision probe was measured
// or read from its cache (nor a resumed run's on a measurement after its generators were restored);
// the generator's state reads back as a checkpoint keeps it.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "host/hardware.h"
#include "host/precision_probe.h"
#include "host/rng_state.h"
#include "test_util.h"

namespace {

at::Tensor draws() { return torch::rand({16}); }  // what dropout would draw next

}  // namespace

TEST(RngState, KeepRngPutsTheGeneratorBack) {
  torch::manual_seed(11);
  const at::Tensor straight = draws();
  torch::manual_seed(11);
  {
    const slm::host::KeepRng keep;
    torch::randn({1000});
  }
  EXPECT_TRUE(torch::equal(draws(), straight));
}

TEST(RngState, MeasuringThePeakMovesNoStream) {
  const slm::test::TempHome home("rng_peak");  // an empty cache: measured now
  at::set_num_threads(1);
  torch::manual_seed(5);
  const at::Tensor straight = draws();
  torch::manual_seed(5);
  const slm::host::DeviceInfo d = slm::host::describe_device("cpu", "fp32", 1, 0, 0, slm::host::PeakCache::kRefresh);
  EXPECT_NE(d.peak_source, "cached");
  EXPECT_TRUE(torch::equal(draws(), straight));
}

TEST(RngState, ProbingThePrecisionMovesNoStream) {
  const slm::test::TempHome home("rng_probe");
  slm::model::GPT2Config c;
  c.n_layer = 1, c.n_head = 2, c.n_embd = 32, c.block_size = 16, c.vocab_size = 64;
  torch::manual_seed(9);
  const at::Tensor straight = draws();
  torch::manual_seed(9);
  const slm::host::PrecisionTiming t = slm::host::time_precisions(c, 2, 16);
  EXPECT_NE(t.source, "cached");
  EXPECT_TRUE(torch::equal(draws(), straight));
}

TEST(RngState, StateReadsBack) {
  const c10::Device cpu(c10::kCPU);
  torch::manual_seed(3);
  const at::Tensor state = slm::host::generator_state(cpu);
  const at::Tensor first = draws();
  slm::host::set_generator_state(cpu, state);
  EXPECT_TRUE(torch::equal(draws(), first));
}
