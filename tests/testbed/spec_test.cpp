// tests/testbed/spec_test.cpp: testbed descriptions: parsing, the address plan, link lookup and
// one-line errors; the tc netem commands made from a description.
#include <gtest/gtest.h>

#include <algorithm>

#include "testbed/netem.h"
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

// The one-line error a description gives ("" when it parses).
static std::string error(const std::string& text) {
  try {
    parse_testbed(text, "t.toml");
  } catch (const slm::UserError& e) {
    return std::string(e.what());
  }
  return std::string();
}

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
  EXPECT_EQ(error("[[site]]\nranks = 2\nspeed = 3\n"), "t.toml: site 0: unknown key 'speed'");
  EXPECT_EQ(error("name = \"x\"\n"), "t.toml: no [[site]] tables");
  EXPECT_EQ(error("[[site]]\nranks = 0\n"), "t.toml: site 0: 'ranks' must be 1..65536");
  EXPECT_EQ(error("name = \"Too-Long-Name\"\n[[site]]\n"), "t.toml: 'name' must be 1-8 lowercase letters or digits");
  EXPECT_EQ(error("[[site]]\nname = \"a\"\n[[link]]\nsites = [\"a\", \"b\"]\n"), "t.toml: link 0: no site named 'b'");
  EXPECT_EQ(error("[[site]]\nname = \"a\"\n[[site]]\nname = \"b\"\n[[link]]\nsites = [\"a\", \"b\"]\ndelay_ms = -1\n"),
            "t.toml: link 0: 'delay_ms' must be >= 0");
  EXPECT_EQ(error("delay = \"fast\"\n[[site]]\n"), "t.toml: 'delay' must be \"auto\", \"netem\" or \"delayer\"");
  EXPECT_EQ(error("[[site]]\ncpus = -1\n"), "t.toml: site 0: 'cpus' must be >= 0");
  // Each number has an upper bound: cpus = 1e308 became a quota of 0.01 cores (llround overflowed; x86),
  // tcp_buffer_mb = 1e308 an undefined cast to the sysctl's bytes.
  EXPECT_EQ(error("[[site]]\ncpus = 1e308\n"), "t.toml: site 0: 'cpus' must be at most 4096");
  EXPECT_EQ(error("tcp_buffer_mb = 4096\n[[site]]\n"), "t.toml: 'tcp_buffer_mb' must be at most 2047");
  const std::string ab = "[[site]]\nname = \"a\"\n[[site]]\nname = \"b\"\n[[link]]\nsites = [\"a\", \"b\"]\n";
  EXPECT_EQ(error(ab + "rate_mbit = 1e300\n"), "t.toml: link 0: 'rate_mbit' must be at most 10000000");
  EXPECT_EQ(error(ab + "delay_ms = 1000000\n"), "");
  // Two links between one pair of sites: one would silently win (in either order of the names).
  EXPECT_EQ(error("[[site]]\nname = \"a\"\n[[site]]\nname = \"b\"\n[[link]]\nsites = [\"a\", \"b\"]\ndelay_ms = 5\n"
                  "[[link]]\nsites = [\"b\", \"a\"]\ndelay_ms = 50\n"),
            "t.toml: link 1: sites 'b' and 'a' already have a link (link 0); give one per pair");
}

TEST(TestbedSpec, DelayBackendAndSlowSite) {
  TestbedSpec s = parse_testbed("delay = \"delayer\"\n" + std::string(kTwoSites).substr(13), "t.toml");
  EXPECT_EQ(s.delay, "delayer");
  EXPECT_EQ(parse_testbed(kTwoSites, "t.toml").delay, "auto");
  s = parse_testbed("[[site]]\nranks = 2\ncpus = 0.5\n[[site]]\n", "t.toml");
  EXPECT_DOUBLE_EQ(s.sites[0].cpus, 0.5);
  EXPECT_DOUBLE_EQ(s.sites[1].cpus, 0);
}

// Rank 2 is the first of amsterdam (site 1): traffic from utah (site 0) gets its own class with a
// netem child of 50 ms and 1000 / 3 Mbit/s (the pair's rate shared by amsterdam's 3 ranks); the
// default class carries amsterdam's own traffic with the inside delay.
TEST(TestbedNetem, ClassPerSourceSite) {
  TestbedSpec s = parse_testbed(kTwoSites, "t.toml");
  std::vector<std::string> devs = {"d0", "d1", "d2", "d3", "d4"};
  std::vector<std::string> c = netem_commands(s, devs);
  std::vector<std::string> d2;
  for (const std::string& x : c)
    if (x.find(" dev d2 ") != std::string::npos) d2.push_back(x);
  ASSERT_EQ(d2.size(), 6u);
  EXPECT_EQ(d2[0], "qdisc add dev d2 root handle 1: htb default 1");
  EXPECT_EQ(d2[1], "class add dev d2 parent 1: classid 1:1 htb rate 100gbit");
  EXPECT_EQ(d2[2], "qdisc add dev d2 parent 1:1 handle 10: netem delay 0.5ms limit 100000");
  EXPECT_EQ(d2[3], "class add dev d2 parent 1: classid 1:10 htb rate 333333kbit");
  EXPECT_EQ(d2[4], "qdisc add dev d2 parent 1:10 handle 1010: netem delay 50ms limit 100000");
  EXPECT_EQ(d2[5], "filter add dev d2 parent 1: protocol ip prio 1 u32 match ip src 10.77.0.0/24 flowid 1:10");
  // utah's ranks receive amsterdam's traffic in class 1:11, at 1000 / 2 Mbit/s.
  bool found = false;
  for (const std::string& x : c) found = found || x == "class add dev d0 parent 1: classid 1:11 htb rate 500000kbit";
  EXPECT_TRUE(found);
  EXPECT_EQ(c.size(), 5 * 6u);
}

// Link faults: parsed on [[link]] tables only, checked, and turned into netem's loss and jitter.
TEST(TestbedSpec, LinkFaults) {
  const std::string two = "[[site]]\nname = \"a\"\n[[site]]\nname = \"b\"\n[[link]]\nsites = [\"a\", \"b\"]\ndelay_ms = 10\n";
  TestbedSpec s = parse_testbed(two + "loss_pct = 5\njitter_ms = 2\ndown_at_s = 30\ndown_for_s = 60\n", "t.toml");
  const LinkSpec l = link_between(s, 1, 0);
  EXPECT_DOUBLE_EQ(l.loss_pct, 5);
  EXPECT_DOUBLE_EQ(l.jitter_ms, 2);
  EXPECT_DOUBLE_EQ(l.down_at_s, 30);
  EXPECT_DOUBLE_EQ(l.down_for_s, 60);
  EXPECT_TRUE(l.faulty());
  EXPECT_FALSE(link_between(parse_testbed(two, "t.toml"), 0, 1).faulty());
  EXPECT_EQ(error(two + "loss_pct = 101\n"), "t.toml: link 0: 'loss_pct' must be at most 100");
  EXPECT_EQ(error(two + "jitter_ms = -1\n"), "t.toml: link 0: 'jitter_ms' must be >= 0");
  EXPECT_EQ(error(two + "down_at_s = 5\n"), "t.toml: link 0: 'down_at_s' needs 'down_for_s' (how long the link is down)");
  EXPECT_EQ(error("[inside]\nloss_pct = 1\n[[site]]\n"), "t.toml: [inside]: unknown key 'loss_pct'");
  // netem: a lossy link without delay still gets its class; jitter follows the delay.
  s = parse_testbed("[[site]]\nname = \"a\"\n[[site]]\nname = \"b\"\n[[link]]\nsites = [\"a\", \"b\"]\nloss_pct = 1\n", "t.toml");
  std::vector<std::string> c = netem_commands(s, {"d0", "d1"});
  EXPECT_NE(std::find(c.begin(), c.end(), "qdisc add dev d1 parent 1:10 handle 1010: netem delay 0ms loss 1% limit 100000"),
            c.end());
  s = parse_testbed(two + "jitter_ms = 2\nloss_pct = 0.5\n", "t.toml");
  c = netem_commands(s, {"d0", "d1"});
  EXPECT_NE(std::find(c.begin(), c.end(), "qdisc add dev d0 parent 1:11 handle 1011: netem delay 10ms 2ms loss 0.5% limit 100000"),
            c.end());
}
