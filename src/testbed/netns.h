// testbed/netns.h: bring an emulated wide-area cluster (testbed/spec.h) up on this machine, run
// a job on it, and tear it down. Needs root; the job's processes need no privilege.
// Owns: testbed_up, testbed_down, testbed_run, testbed_readiness. Layout: one network namespace per rank
// (<name>-r<i>, interface eth0 with the address of spec.h) joined by veth pairs to a router
// namespace (<name>-rt, IP forwarding on). Delays and site-to-site bandwidth (spec `delay`): tc
// netem classes on the router's interfaces (testbed/netem.h) where the kernel has sch_netem, else
// iptables-legacy in the router sends each delayed site pair's packets to an NFQUEUE served by
// slm-delayer (testbed/delayer_main.cpp); rate limits inside a site: tc tbf on the rank's end
// (and the router's: tbf with the delayer, the htb default class with netem). Every namespace gets
// TCP buffers of tcp_buffer_mb so that a long fat link is not capped by the bandwidth-delay
// product. Sites with `cpus` get a cgroup CPU quota (testbed/cgroup.h) that testbed_run's ranks join.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "testbed/spec.h"

namespace slm::testbed {

// UserError (one line) when not root, a tool is missing, or a step fails (then everything made
// so far is removed). `delayer` = path of slm-delayer.
void testbed_up(const TestbedSpec& s, const std::string& delayer);
// Removes the delayer, every process left in the namespaces, the namespaces and the site cgroups.
// Idempotent. link_log: where to keep the delayer's per-link byte counters ("" = drop them; the
// netem links keep none).
void testbed_down(const TestbedSpec& s, const std::string& link_log = "");
// up, then `command` once per rank in its namespace (slm launch semantics: rank env variables,
// "[rank]" prefixes, stop all on a failure, max_restarts), then down, also after a failure or a signal.
// Returns the job's exit code.
int testbed_run(const TestbedSpec& s, const std::string& delayer, const std::vector<std::string>& command,
                int port, const std::string& link_log = "", int max_restarts = 0);
// up, job(), down (also after a failure or a signal); returns job()'s code.
int testbed_run_with(const TestbedSpec& s, const std::string& delayer, const std::string& link_log,
                     const std::function<int()>& job);
// The words that run a command as rank i: into its site's cgroup (when the site has `cpus`), then
// `ip netns exec <name>-r<i>`.
std::vector<std::string> rank_prefix(const TestbedSpec& s, int rank);

// Whether `slm testbed` can run here (for `slm doctor`): root, the tools, network namespaces (a
// throw-away one is made and removed) and how links would be delayed: sch_netem where this kernel
// has it, else slm-delayer at `delayer`. When not ok, `detail` says what is missing and `fix` the
// command that mends it.
struct Readiness {
  bool ok = false;
  std::string detail, fix;
};
Readiness testbed_readiness(const std::string& delayer);

}  // namespace slm::testbed
