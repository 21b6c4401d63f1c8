// tests/testbed/spec_test.cpp: testbed descriptions: parsing, the address plan, link lookup and
// one-line errors.
#include <gtest/gtest.h>

#include "testbed/spec.h"
#include "util/error.h"

using namespace slm::testbed;

static const char* kTwoSites = R"(name = "geo"
[inside]
delay_ms = 0.5
[[site]]
name = "utah"
ranks = 2
[[site]]
name = "amsterdam"
ranks = 3
[[link]]
sites = ["utah", "amsterdam"]
delay_ms = 50
rate_mbit = 1000
)";

TEST(TestbedSpec, ParsesAndNumbers) {
  TestbedSpec s = parse_testbed(kTwoSites, "t.toml");
  EXPECT_EQ(s.name, "geo");
  EXPECT_EQ(s.world(), 5);
  EXPECT_EQ(site_of(s, 1), 0);
  EXPECT_EQ(site_of(s, 2), 1);
  EXPECT_EQ(rank_address(s, 0), "10.77.0.2");
  EXPECT_EQ(rank_address(s, 1), "10.77.0.6");
  EXPECT_EQ(rank_address(s, 4), "10.77.1.10");
  EXPECT_EQ(router_address(s, 4), "10.77.1.9");
  EXPECT_EQ(site_subnet(1), "10.77.1.0/24");
  EXPECT_DOUBLE_EQ(link_between(s, 0, 1).delay_ms, 50);
  EXPECT_DOUBLE_EQ(link_between(s, 1, 0).rate_mbit, 1000);
  EXPECT_DOUBLE_EQ(link_between(s, 1, 1).delay_ms, 0.5);
}

TEST(TestbedSpec, OneLineErrors) {
  auto error = [](const std::string& text) {
    try {
      parse_testbed(text, "t.toml");
    } catch (const slm::UserError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error("[[site]]\nranks = 2\nspeed = 3\n"), "t.toml: site 0: unknown key 'speed'");
  EXPECT_EQ(error("name = \"x\"\n"), "t.toml: no [[site]] tables");
  EXPECT_EQ(error("[[site]]\nranks = 0\n"), "t.toml: site 0: 'ranks' must be 1..63");
  EXPECT_EQ(error("name = \"Too-Long-Name\"\n[[site]]\n"), "t.toml: 'name' must be 1-8 lowercase letters or digits");
  EXPECT_EQ(error("[[site]]\nname = \"a\"\n[[link]]\nsites = [\"a\", \"b\"]\n"), "t.toml: link 0: no site named 'b'");
  EXPECT_EQ(error("[[site]]\nname = \"a\"\n[[site]]\nname = \"b\"\n[[link]]\nsites = [\"a\", \"b\"]\ndelay_ms = -1\n"),
            "t.toml: link 0: 'delay_ms' must be >= 0");
}
