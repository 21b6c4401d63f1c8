// testbed/netem.h: the tc commands that emulate the testbed's links with sch_netem, for kernels
// that have it (the other way is slm-delayer, testbed/delayer_main.cpp). Pure: no torch, runs
// nothing. Owns: netem_commands.
// On the router's veth towards each rank (egress = traffic arriving at that rank): an htb root
// whose default class carries traffic from the rank's own site (inside rate, netem for an inside
// delay), and one class per other site, selected by a u32 filter on the source subnet, with a netem
// child holding packets for that site pair's one-way delay. A site pair's rate is divided among the
// receiving site's ranks (each veth gets rate / ranks), so the pair's aggregate stays within it;
// slm-delayer instead serialises the whole pair through one queue. A link's loss_pct and
// jitter_ms become netem's `loss` and jitter; outages (down_at_s) need slm-delayer.
#pragma once
#include <string>
#include <vector>

#include "testbed/spec.h"

namespace slm::testbed {

// `tc` argument lists (without "tc -n <router>"), in order, for every router-side interface;
// router_dev(i) names the router end of rank i's veth.
std::vector<std::string> netem_commands(const TestbedSpec& s, const std::vector<std::string>& router_devs);

}  // namespace slm::testbed
