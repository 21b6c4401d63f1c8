// testbed/netem.cpp: see netem.h.
#include "testbed/netem.h"

#include <cmath>
#include <fmt/format.h>

namespace slm::testbed {
namespace {

std::string rate_of(double mbit) {
  return mbit > 0 ? fmt::format("{}kbit", std::llround(mbit * 1000)) : std::string("100gbit");
}

// netem's queue must hold a bandwidth-delay product of packets (1 Gbit/s x 100 ms ~ 8,600).
constexpr int kNetemLimit = 100000;

}  // namespace

std::vector<std::string> netem_commands(const TestbedSpec& s, const std::vector<std::string>& router_devs) {
  std::vector<std::string> out;
  for (int i = 0; i < s.world(); ++i) {
    const std::string& dev = router_devs[static_cast<size_t>(i)];
    const int y = site_of(s, i);
    const int ranks_y = s.sites[static_cast<size_t>(y)].ranks;
    out.push_back(fmt::format("qdisc add dev {} root handle 1: htb default 1", dev));
    out.push_back(fmt::format("class add dev {} parent 1: classid 1:1 htb rate {}", dev, rate_of(s.inside.rate_mbit)));
    if (s.inside.delay_ms > 0)
      out.push_back(fmt::format("qdisc add dev {} parent 1:1 handle 10: netem delay {}ms limit {}", dev,
                                s.inside.delay_ms, kNetemLimit));
    for (int x = 0; x < static_cast<int>(s.sites.size()); ++x) {
      if (x == y) continue;
      const LinkSpec l = link_between(s, x, y);
      if (l.delay_ms <= 0 && l.rate_mbit <= 0 && !l.faulty()) continue;
      const int cls = 10 + x;
      out.push_back(fmt::format("class add dev {} parent 1: classid 1:{} htb rate {}", dev, cls,
                                rate_of(l.rate_mbit > 0 ? l.rate_mbit / ranks_y : 0)));
      // Jitter and loss as netem does them (a jittered netem link may reorder packets). Outages are
      // slm-delayer's alone (use_netem chooses it for them).
      std::string faults;
      if (l.jitter_ms > 0) faults += fmt::format(" {}ms", l.jitter_ms);
      if (l.loss_pct > 0) faults += fmt::format(" loss {}%", l.loss_pct);
      out.push_back(fmt::format("qdisc add dev {} parent 1:{} handle {}: netem delay {}ms{} limit {}", dev, cls,
                                cls + 1000, l.delay_ms, faults, kNetemLimit));
      out.push_back(fmt::format("filter add dev {} parent 1: protocol ip prio 1 u32 match ip src {} flowid 1:{}", dev,
                                site_subnet(x), cls));
    }
  }
  return out;
}

}  // namespace slm::testbed
