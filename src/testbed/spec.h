// testbed/spec.h: the description of an emulated wide-area cluster on one machine: sites, ranks
// per site, one-way delay and bandwidth inside sites and between pairs of sites. Pure: no torch.
// Owns: TestbedSpec, parse_testbed (TOML), the address plan (rank_address, site_subnet), and
// site_of. Example (2 sites x 2 ranks, 50 ms one-way = 100 ms RTT, 1 Gbit/s between sites):
//   name = "geo"                       # namespaces geo-r0.., geo-router
//   delay = "auto"                     # auto | netem | delayer (auto: netem where the kernel has it)
//   [inside]                           # links inside every site (optional)
//   delay_ms = 0
//   rate_mbit = 0                      # 0 = unlimited
//   [[site]]
//   name = "utah"
//   ranks = 2
//   [[site]]
//   name = "amsterdam"
//   ranks = 2
//   cpus = 0.5                         # CPU time (cores) its ranks share: a slower site; 0 = no limit
//   device = "cpu"                     # for the planner (planner/devices.h): "cpu", "T4", "A100-40GB", ...
//   memory_gb = 16                     # per rank; 0 = the device table's (CPU: unknown = no cap)
//   price_per_hour = 0.35              # USD per rank-hour; 0 = the device table's assumed price
//   [[link]]
//   sites = ["utah", "amsterdam"]
//   delay_ms = 50                      # one way
//   rate_mbit = 1000                   # 0 = unlimited
// The same file is the cluster description the planner reads (planner/cluster.h): for a real
// cluster it is never brought up, and its links may come from `slm probe` instead.
// Ranks are numbered site by site. Rank k of site s has address 10.77.s.(4k+2)/30 (its router end
// 10.77.s.(4k+1)), so site s is 10.77.s.0/24 and a rule per site pair covers all its ranks.
#pragma once
#include <string>
#include <vector>

namespace slm::testbed {

struct LinkSpec {
  double delay_ms = 0;   // one-way
  double rate_mbit = 0;  // 0 = unlimited
  // Faults ([[link]] only): each packet is lost with probability loss_pct / 100; its delay varies
  // by up to +-jitter_ms (packets stay in order); the link is down (every packet lost) from
  // down_at_s for down_for_s seconds after the testbed comes up.
  double loss_pct = 0, jitter_ms = 0, down_at_s = 0, down_for_s = 0;
  bool faulty() const { return loss_pct > 0 || jitter_ms > 0 || down_for_s > 0; }
};

struct SiteSpec {
  std::string name;
  int ranks = 1;
  double cpus = 0;  // CPU time (cores) the site's ranks get together (a cgroup quota); 0 = no limit
  std::string device = "cpu";  // device type of every rank of the site (planner/devices.h)
  double memory_gb = 0;        // memory per rank, GiB; 0 = the device table's
  double price_per_hour = 0;   // USD per rank-hour; 0 = the device table's (an assumption)
};

struct PairSpec {
  int a = 0, b = 0;  // site indices (a != b); the link is symmetric
  LinkSpec link;
};

struct TestbedSpec {
  std::string name = "slm";     // prefix of namespaces and interfaces (<= 8 characters)
  std::vector<SiteSpec> sites;
  LinkSpec inside;              // every pair of ranks in the same site
  std::vector<PairSpec> pairs;  // site pairs not listed are joined with no delay and no limit
  double tcp_buffer_mb = 64;    // per-namespace TCP buffer maximum (bandwidth-delay product)
  std::string delay = "auto";   // how delays and site-pair rates are made: "netem" (tc, testbed/netem.h),
                                // "delayer" (slm-delayer), "auto" = netem where the kernel has it
  int world() const;
};

// UserError (one line, with `where`) for malformed TOML, unknown keys or bad values.
TestbedSpec parse_testbed(const std::string& toml_text, const std::string& where);
// UserError unless the spec can be emulated here: at most kMaxEmulatedRanks ranks per site
// (the address plan), CPU devices only.
constexpr int kMaxEmulatedRanks = 63;
void check_emulatable(const TestbedSpec& s, const std::string& where);

int site_of(const TestbedSpec& s, int rank);
std::string rank_address(const TestbedSpec& s, int rank);    // "10.77.S.(4k+2)"
std::string router_address(const TestbedSpec& s, int rank);  // "10.77.S.(4k+1)"
std::string site_subnet(int site);                            // "10.77.S.0/24"
// The link between two sites (inside for a == b).
LinkSpec link_between(const TestbedSpec& s, int a, int b);

}  // namespace slm::testbed
