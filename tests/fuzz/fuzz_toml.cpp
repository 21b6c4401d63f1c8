// tests/fuzz/fuzz_toml.cpp: the TOML readers a user writes by hand: the testbed / cluster
// description (testbed/spec, planner/cluster) and plan files (parallel/plan). Every input must
// end in a value or a UserError: no crash, no sanitizer report, no other exception.
#include <string>

#include "fuzz_util.h"
#include "parallel/plan.h"
#include "planner/cluster.h"
#include "testbed/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  slm::fuzz::expect_clean([&] {
    const slm::testbed::TestbedSpec s = slm::testbed::parse_testbed(text, "fuzz.toml");
    slm::fuzz::expect_clean([&] { slm::testbed::check_emulatable(s, "fuzz.toml"); });
    slm::planner::cluster_from_spec(s, "fuzz.toml");
  });
  slm::fuzz::expect_clean([&] { slm::parallel::parse_plan(text, "plan.toml"); });
  return 0;
}
