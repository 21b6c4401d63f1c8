// tests/planner/cluster_test.cpp: the cluster file (the testbed TOML with devices) and a probe's
// links applied to it.
#include <gtest/gtest.h>

#include "parallel/plan.h"
#include "planner/cluster.h"
#include "planner/comm_cost.h"
#include "planner/devices.h"
#include "planner/stage_split.h"
#include "planner_test_util.h"
#include "testbed/spec.h"
#include "util/error.h"

namespace slm::planner {
namespace {

// The probe's round trips at its sizes become each link's one-way times (the median over its rank
// pairs), which a point-to-point message takes (comm_cost.h: p2p_s).
TEST(Cluster, AProbesRoundTripsAtItsSizesBecomeTheLinksOneWayTimes) {
  const std::string toml = "[[site]]\nname = \"a\"\nranks = 2\n[[site]]\nname = \"b\"\nranks = 2\n"
                           "[[link]]\nsites = [\"a\", \"b\"]\ndelay_ms = 50\n";
  const Cluster c = cluster_from_spec(testbed::parse_testbed(toml, "c.toml"), "c.toml");
  const std::string probe = R"({"world": 4, "sizes": [4, 262144, 2097152], "pairs": [
    {"a": 0, "b": 1, "alpha_s": 0.0001, "beta_Bps": 1e9, "class": "local", "rtt_s": [0.0002, 0.0004, 0.002]},
    {"a": 0, "b": 2, "alpha_s": 0.05, "beta_Bps": 6e7, "class": "wide", "rtt_s": [0.100, 0.216, 0.214]},
    {"a": 1, "b": 3, "alpha_s": 0.05, "beta_Bps": 6e7, "class": "wide", "rtt_s": [0.101, 0.220, 0.210]},
    {"a": 0, "b": 3, "alpha_s": 0.05, "beta_Bps": 6e7, "class": "wide", "rtt_s": [0.102, 0.210, 0.218]}]})";
  Cluster d = c;
  apply_topology(d, probe, "t.json");
  using P = std::vector<std::pair<double, double>>;
  EXPECT_EQ(d.between(1, 2).one_way, (P{{4, 0.0505}, {262144, 0.108}, {2097152, 0.107}}));
  EXPECT_EQ(d.between(0, 1).one_way, (P{{4, 0.0001}, {262144, 0.0002}, {2097152, 0.001}}));
  EXPECT_NEAR(p2p_s(d.between(1, 2), 262144), 0.108, 1e-12);
  // Without sizes (an older probe), or a pair without its round trips: the α-β line only.
  Cluster e = c;
  std::string older = probe;
  older.erase(older.find(R"("sizes")"), std::string(R"("sizes": [4, 262144, 2097152], )").size());
  apply_topology(e, older, "t.json");
  EXPECT_TRUE(e.between(1, 2).one_way.empty());
  std::string partial = probe;
  partial.erase(partial.rfind(R"(, "rtt_s")"), std::string(R"(, "rtt_s": [0.102, 0.210, 0.218])").size());
  apply_topology(e, partial, "t.json");
  EXPECT_TRUE(e.between(1, 2).one_way.empty());
  EXPECT_EQ(e.between(0, 1).one_way.size(), 3u);
  std::string unsorted = probe;
  unsorted.replace(unsorted.find("[4, 262144, 2097152]"), 20, "[4, 2097152, 262144]");
  EXPECT_THROW(apply_topology(e, unsorted, "t.json"), UserError);
}

TEST(Cluster, FromTheTestbedFileWithDevicesAndAProbe) {
  const std::string toml =
      "[[site]]\nname = \"utah\"\nranks = 2\ndevice = \"T4\"\n"
      "[[site]]\nname = \"ams\"\nranks = 2\ndevice = \"a100\"\nmemory_gb = 30\nprice_per_hour = 1.5\n"
      "[[link]]\nsites = [\"utah\", \"ams\"]\ndelay_ms = 51.5\nrate_mbit = 1000\n";
  const Cluster c = cluster_from_spec(testbed::parse_testbed(toml, "c.toml"), "c.toml");
  ASSERT_EQ(c.world(), 4);
  EXPECT_EQ(c.ranks[0].device, "T4");
  EXPECT_DOUBLE_EQ(c.ranks[0].memory_gb, find_device("T4")->memory_gb);
  EXPECT_DOUBLE_EQ(c.ranks[0].price_per_hour, 0.35);
  EXPECT_EQ(c.ranks[3].device, "A100-40GB");
  EXPECT_DOUBLE_EQ(c.ranks[3].memory_gb, 30);
  EXPECT_DOUBLE_EQ(c.ranks[3].price_per_hour, 1.5);
  EXPECT_NEAR(c.between(1, 2).alpha_s, kBaseAlpha + 0.0515, 1e-12);
  EXPECT_NEAR(c.between(1, 2).beta_Bps, 125e6, 1e-3);
  EXPECT_NEAR(c.between(0, 1).beta_Bps, kUnlimitedBps, 1e-3);
  try {
    cluster_from_spec(testbed::parse_testbed("[[site]]\ndevice = \"V100\"\n", "c.toml"), "c.toml");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown device 'V100' (known: T4"), std::string::npos) << e.what();
  }
  // A probe overrides the links: medians of the rank pairs between the sites.
  Cluster d = c;
  const std::string probe = R"({"world": 4, "pairs": [
    {"a": 0, "b": 1, "alpha_s": 0.0001, "beta_Bps": 1e9, "class": "local"},
    {"a": 2, "b": 3, "alpha_s": 0.0001, "beta_Bps": 1e9, "class": "local"},
    {"a": 0, "b": 2, "alpha_s": 0.020, "beta_Bps": 5e7, "class": "wide"},
    {"a": 1, "b": 3, "alpha_s": 0.022, "beta_Bps": 7e7, "class": "wide"}]})";
  apply_topology(d, probe, "t.json");
  EXPECT_NEAR(d.between(1, 2).alpha_s, 0.021, 1e-12);
  EXPECT_NEAR(d.between(1, 2).beta_Bps, 125e6, 1e-3);  // the file's rate stays (the probe under-measures)
  EXPECT_NEAR(d.between(0, 1).alpha_s, 0.0001, 1e-12);
  EXPECT_NEAR(d.between(0, 1).beta_Bps, 1e9, 1e-3);    // no rate in the file: the probe's
  // Over a short link (125 MB/s x 2 x 0.3 ms = 75 kB < 0.5 MiB) the probe's 2 MiB messages fill it:
  // its β replaces the file's rate.
  Cluster near = c;
  apply_topology(near, R"({"world": 4, "pairs": [
    {"a": 1, "b": 2, "alpha_s": 0.0003, "beta_Bps": 9e7, "class": "local"}]})", "t.json");
  EXPECT_NEAR(near.between(1, 2).beta_Bps, 9e7, 1e-3);
  EXPECT_THROW(apply_topology(d, R"({"world": 3, "pairs": []})", "t.json"), UserError);
  EXPECT_EQ(d.hops.all_reduce.at_1MiB, 0);  // no collectives timed
  // The probe's collective timings become hop latencies of the world ring's slowest link.
  std::string timed = probe;
  timed.insert(timed.size() - 1, R"J(, "collectives": [{"op": "all-reduce", "bytes": 4, "seconds": 0.2},
    {"op": "all-reduce", "bytes": 1048576, "seconds": 0.4}, {"op": "all-gather", "bytes": 1048576, "seconds": 0.2},
    {"op": "all-reduce (hierarchical)", "bytes": 1048576, "seconds": 9}, {"op": "all-gather", "bytes": 16777216, "seconds": 0.5}])J");
  apply_topology(d, timed, "t.json");
  // The 16 MiB all-gather: 3/4 of its bytes in its time less 3 hops of the 1 MiB one's latency.
  EXPECT_NEAR(d.hops.all_gather_Bps, 0.75 * 16777216 / (0.5 - 3 * d.hops.all_gather.at_1MiB), 1e-3);
  EXPECT_NEAR(d.hops.link_alpha_s, 0.021, 1e-12);
  EXPECT_NEAR(d.hops.all_reduce.at_4B, fit_hop_latency_s(true, 4, d.between(1, 2), 4, 0.2), 1e-12);
  EXPECT_NEAR(d.hops.all_reduce.at_1MiB, fit_hop_latency_s(true, 4, d.between(1, 2), 1048576, 0.4), 1e-12);
  EXPECT_NEAR(d.hops.all_gather.at_1MiB, fit_hop_latency_s(false, 4, d.between(1, 2), 1048576, 0.2), 1e-12);
  EXPECT_EQ(d.hops.all_gather.at_4B, 0);
  EXPECT_GT(d.hops.all_reduce.at_1MiB, 0.021);
  EXPECT_THROW(apply_topology(d, R"({"world": 4, "pairs": [], "collectives": [{"op": 1}]})", "t.json"), UserError);
  EXPECT_THROW(apply_topology(d, R"({"world": 4, "pairs": [], "collectives": [
    {"op": "all-reduce", "bytes": 4, "seconds": 1e300}]})", "t.json"), UserError);
  // Without a file: sites are the groups of ranks joined by local links.
  const Cluster e = cluster_from_probe(probe, "cpu", "t.json");
  ASSERT_EQ(e.sites.size(), 2u);
  EXPECT_EQ(e.ranks[1].site, 0);
  EXPECT_EQ(e.ranks[2].site, 1);
  EXPECT_NEAR(e.between(0, 3).alpha_s, 0.021, 1e-12);
  EXPECT_EQ(cluster_from_probe(probe, "cpu", "t.json", /*one_site=*/true).sites.size(), 1u);
  // A noisy probe that joins ranks 0 and 2 but not 1: sites stay contiguous ranges.
  const std::string noisy = R"({"world": 4, "pairs": [
    {"a": 0, "b": 2, "alpha_s": 0.0001, "beta_Bps": 1e9, "class": "local"},
    {"a": 0, "b": 1, "alpha_s": 0.01, "beta_Bps": 1e9, "class": "wide"},
    {"a": 1, "b": 3, "alpha_s": 0.01, "beta_Bps": 1e9, "class": "wide"},
    {"a": 2, "b": 3, "alpha_s": 0.01, "beta_Bps": 1e9, "class": "wide"}]})";
  const Cluster f = cluster_from_probe(noisy, "cpu", "t.json");
  ASSERT_EQ(f.sites.size(), 2u);
  EXPECT_EQ(f.ranks[1].site, 0);
  EXPECT_EQ(f.ranks[2].site, 0);
  EXPECT_EQ(f.ranks[3].site, 1);
}

}  // namespace
}  // namespace slm::planner
