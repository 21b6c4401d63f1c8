// testbed/netns.cpp: see netns.h.
#include "testbed/netns.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <thread>

#include "comm/launch.h"
#include "testbed/cgroup.h"
#include "testbed/netem.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::testbed {
namespace {

std::string rank_ns(const TestbedSpec& s, int i) { return fmt::format("{}-r{}", s.name, i); }
std::string router_ns(const TestbedSpec& s) { return s.name + "-rt"; }
std::string pid_file(const TestbedSpec& s) { return fmt::format("/run/slm-testbed-{}.pid", s.name); }
std::string log_file(const TestbedSpec& s) { return fmt::format("/run/slm-testbed-{}.log", s.name); }
std::string router_dev(const TestbedSpec& s, int i) { return fmt::format("{}b{}", s.name, i); }
std::string cgroup_name(const TestbedSpec& s, int site) { return fmt::format("slm-{}-{}", s.name, site); }

// Runs a shell command; returns its exit status and combined output.
std::pair<int, std::string> shell(const std::string& cmd) {
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) throw UserError("testbed: cannot run " + cmd);
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : 128, out};
}

// Runs a command that must succeed: UserError naming it and its first output line.
void must(const std::string& cmd) {
  auto [rc, out] = shell(cmd);
  if (rc != 0)
    throw UserError(fmt::format("testbed: `{}` failed: {}", cmd, out.substr(0, out.find('\n'))));
}

bool have(const std::string& tool) { return shell("command -v " + tool).first == 0; }

void kill_delayer(const TestbedSpec& s) {
  if (!path_exists(pid_file(s))) return;
  const pid_t pid = static_cast<pid_t>(std::atoi(read_file(pid_file(s)).c_str()));
  auto gone = [pid] {  // reaped (our child) or no longer there
    int st = 0;
    return ::waitpid(pid, &st, WNOHANG) == pid || ::kill(pid, 0) != 0;
  };
  if (pid > 1 && ::kill(pid, SIGTERM) == 0)
    for (int i = 0; i < 40 && !gone(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (pid > 1 && !gone()) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  std::remove(pid_file(s).c_str());
}

// Starts slm-delayer in the router namespace as a daemon; waits for it to report ready.
void start_delayer(const TestbedSpec& s, const std::string& delayer, const std::vector<std::string>& links) {
  if (!path_exists(delayer))
    throw UserError(fmt::format("testbed: {} not found (built only where libnetfilter-queue-dev is installed; "
                                "scripts/setup.sh installs it)",
                                delayer));
  std::remove(log_file(s).c_str());
  const pid_t pid = ::fork();
  if (pid < 0) throw UserError("testbed: fork failed");
  if (pid == 0) {
    ::setsid();
    FILE* log = std::fopen(log_file(s).c_str(), "w");
    if (log) ::dup2(fileno(log), STDERR_FILENO), ::dup2(fileno(log), STDOUT_FILENO);
    std::vector<std::string> args = {"ip", "netns", "exec", router_ns(s), delayer};
    for (const auto& l : links) args.push_back("--link"), args.push_back(l);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  write_file_atomic(pid_file(s), std::to_string(pid));
  for (int i = 0; i < 100; ++i) {
    const std::string log = path_exists(log_file(s)) ? read_file(log_file(s)) : "";
    if (log.find("ready") != std::string::npos) return;
    int st = 0;
    if (::waitpid(pid, &st, WNOHANG) == pid)
      throw UserError("testbed: slm-delayer failed: " + log.substr(0, log.find('\n')));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  throw UserError("testbed: slm-delayer did not start within 5 s");
}

// Whether the links use sch_netem: asked for, or (auto) the kernel has it (tried on the router's lo).
bool use_netem(const TestbedSpec& s) {
  const std::string R = router_ns(s);
  if (s.delay == "delayer") return false;
  for (const PairSpec& p : s.pairs)
    if (p.link.down_for_s > 0) {  // scheduled outages: slm-delayer's clock does them
      if (s.delay == "netem")
        throw UserError("testbed: link outages (down_at_s, down_for_s) need delay = \"auto\" or \"delayer\", not \"netem\"");
      return false;
    }
  const bool have_netem = shell(fmt::format("tc -n {} qdisc add dev lo root netem delay 0ms", R)).first == 0;
  if (have_netem) shell(fmt::format("tc -n {} qdisc del dev lo root", R));
  if (s.delay == "netem" && !have_netem)
    throw UserError("testbed: this kernel has no sch_netem (delay = \"netem\"); use delay = \"auto\" or \"delayer\"");
  return have_netem;
}

// Links with sch_netem on the router's interfaces (testbed/netem.h).
void netem_links(const TestbedSpec& s) {
  std::vector<std::string> devs;
  for (int i = 0; i < s.world(); ++i) devs.push_back(router_dev(s, i));
  for (const std::string& c : netem_commands(s, devs)) must(fmt::format("tc -n {} {}", router_ns(s), c));
  std::fprintf(stderr, "testbed: links made with tc netem\n");
}

// Links with iptables NFQUEUE rules served by slm-delayer (kernels without sch_netem).
void delayer_links(const TestbedSpec& s, const std::string& delayer) {
  const std::string R = router_ns(s);
  if (s.inside.rate_mbit > 0)
    for (int i = 0; i < s.world(); ++i)
      must(fmt::format("tc -n {} qdisc add dev {} root tbf rate {}mbit burst 1mb latency 1s", R, router_dev(s, i),
                       s.inside.rate_mbit));
  std::vector<std::string> links;
  const int S = static_cast<int>(s.sites.size());
  for (int x = 0; x < S; ++x)
    for (int y = 0; y < S; ++y) {
      const LinkSpec l = link_between(s, x, y);
      const double rate = x == y ? 0 : l.rate_mbit;  // inside a site: tbf above
      if (l.delay_ms <= 0 && rate <= 0 && !l.faulty()) continue;
      const int q = static_cast<int>(links.size());
      must(fmt::format("ip netns exec {} iptables-legacy -w -A FORWARD -s {} -d {} -j NFQUEUE --queue-num {}", R,
                       site_subnet(x), site_subnet(y), q));
      links.push_back(fmt::format("{}:{}:{}:{}:{}:{}:{}", q, l.delay_ms, rate, l.loss_pct, l.jitter_ms, l.down_at_s,
                                  l.down_for_s));
      std::string faults;
      if (l.loss_pct > 0) faults += fmt::format(", {}% loss", l.loss_pct);
      if (l.jitter_ms > 0) faults += fmt::format(", jitter +-{} ms", l.jitter_ms);
      if (l.down_for_s > 0) faults += fmt::format(", down {}..{} s", l.down_at_s, l.down_at_s + l.down_for_s);
      std::fprintf(stderr, "testbed: link %d = %s -> %s, %g ms one way, %s%s\n", q,
                   s.sites[static_cast<size_t>(x)].name.c_str(), s.sites[static_cast<size_t>(y)].name.c_str(),
                   l.delay_ms, rate > 0 ? fmt::format("{} Mbit/s", rate).c_str() : "unlimited", faults.c_str());
    }
  if (!links.empty()) start_delayer(s, delayer, links);
}

void up_unchecked(const TestbedSpec& s, const std::string& delayer) {
  const std::string R = router_ns(s);
  must("ip netns add " + R);
  must(fmt::format("ip -n {} link set lo up", R));
  must(fmt::format("ip netns exec {} sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward'", R));
  const std::string buf = std::to_string(static_cast<int64_t>(s.tcp_buffer_mb * 1024 * 1024));
  for (int i = 0; i < s.world(); ++i) {
    const std::string N = rank_ns(s, i), a = fmt::format("{}a{}", s.name, i), b = router_dev(s, i);
    must("ip netns add " + N);
    must(fmt::format("ip link add {} type veth peer name {}", a, b));
    must(fmt::format("ip link set {} netns {}", a, N));
    must(fmt::format("ip link set {} netns {}", b, R));
    must(fmt::format("ip -n {} link set {} name eth0", N, a));
    must(fmt::format("ip -n {} addr add {}/30 dev eth0", N, rank_address(s, i)));
    must(fmt::format("ip -n {} link set eth0 up", N));
    must(fmt::format("ip -n {} link set lo up", N));
    must(fmt::format("ip -n {} route add default via {}", N, router_address(s, i)));
    must(fmt::format("ip -n {} addr add {}/30 dev {}", R, router_address(s, i), b));
    must(fmt::format("ip -n {} link set {} up", R, b));
    must(fmt::format("ip netns exec {} sh -c 'echo \"4096 131072 {}\" > /proc/sys/net/ipv4/tcp_wmem && "
                     "echo \"4096 131072 {}\" > /proc/sys/net/ipv4/tcp_rmem'",
                     N, buf, buf));
    shell(fmt::format("ip netns exec {} sh -c 'echo {} > /proc/sys/net/core/wmem_max; echo {} > "
                      "/proc/sys/net/core/rmem_max'",
                      N, buf, buf));  // per namespace on recent kernels; harmless elsewhere
    if (s.inside.rate_mbit > 0)
      must(fmt::format("tc -n {} qdisc add dev eth0 root tbf rate {}mbit burst 1mb latency 1s", N, s.inside.rate_mbit));
  }
  use_netem(s) ? netem_links(s) : delayer_links(s, delayer);
  for (size_t x = 0; x < s.sites.size(); ++x)
    if (s.sites[x].cpus > 0) {
      make_site_cgroup(cgroup_name(s, static_cast<int>(x)), s.sites[x].cpus);
      std::fprintf(stderr, "testbed: site %s gets %g CPU cores for its %d ranks\n", s.sites[x].name.c_str(),
                   s.sites[x].cpus, s.sites[x].ranks);
    }
}

}  // namespace

void testbed_down(const TestbedSpec& s, const std::string& link_log) {
  kill_delayer(s);
  if (path_exists(log_file(s))) {
    if (!link_log.empty()) write_file_atomic(link_log, read_file(log_file(s)));  // what the emulated links carried (slm-delayer's last words)
    std::istringstream log(read_file(log_file(s)));
    std::string line;
    while (std::getline(log, line))
      if (line.find("carried") != std::string::npos) std::fprintf(stderr, "testbed: %s\n", line.substr(13).c_str());
    std::remove(log_file(s).c_str());
  } else if (!link_log.empty()) {
    std::fprintf(stderr, "testbed: no link counters for %s (only slm-delayer keeps them: delay = \"delayer\")\n",
                 link_log.c_str());
  }
  std::istringstream names(shell("ip netns list").second);
  std::string line;
  while (std::getline(names, line)) {
    const std::string ns = line.substr(0, line.find(' '));
    if (ns.rfind(s.name + "-", 0) != 0) continue;
    shell(fmt::format("for p in $(ip netns pids {}); do kill -9 $p; done", ns));  // jobs left behind
    shell("ip netns delete " + ns);
  }
  remove_site_cgroups(fmt::format("slm-{}-", s.name));
}

// Root and the tools testbed_up needs: "" when present, else what is missing.
static std::string missing_prerequisite() {
  if (::geteuid() != 0) return "needs root (network namespaces, tc, iptables); run it with sudo";
  for (const char* tool : {"ip", "tc", "iptables-legacy"})
    if (!have(tool)) return fmt::format("'{}' not found (Debian: iproute2, iptables; scripts/setup.sh installs them)", tool);
  return "";
}

Readiness testbed_readiness(const std::string& delayer) {
  if (const std::string m = missing_prerequisite(); !m.empty())
    return {false, m, ::geteuid() != 0 ? "sudo slm doctor" : "sudo bash scripts/setup.sh --deps"};
  const std::string ns = fmt::format("slm-doctor-{}", ::getpid());
  if (const auto [rc, out] = shell("ip netns add " + ns); rc != 0)
    return {false, "cannot make a network namespace: " + out.substr(0, out.find('\n')),
            "run on a host (or a container with CAP_SYS_ADMIN and CAP_NET_ADMIN)"};
  const bool netem = shell(fmt::format("tc -n {} qdisc add dev lo root netem delay 0ms", ns)).first == 0;
  shell("ip netns delete " + ns);
  if (netem) return {true, "root, network namespaces, links by tc netem", ""};
  if (!path_exists(delayer))
    return {false, "this kernel has no sch_netem and " + delayer + " is missing (it needs libnetfilter-queue-dev)",
            "bash scripts/setup.sh --build"};
  return {true, "root, network namespaces, links by slm-delayer (this kernel has no sch_netem)", ""};
}

void testbed_up(const TestbedSpec& s, const std::string& delayer) {
  if (const std::string m = missing_prerequisite(); !m.empty()) throw UserError("testbed: " + m);
  testbed_down(s);  // leftovers of an earlier run
  try {
    up_unchecked(s, delayer);
  } catch (...) {
    testbed_down(s);
    throw;
  }
}

std::vector<std::string> rank_prefix(const TestbedSpec& s, int rank) {
  // Into the site's cgroup (made by testbed_up) first: `ip netns exec` mounts its own /sys.
  const int site = site_of(s, rank);
  std::vector<std::string> p;
  if (s.sites[static_cast<size_t>(site)].cpus > 0) p = cgroup_prefix(cgroup_dir(cgroup_name(s, site)));
  for (const char* a : {"ip", "netns", "exec"}) p.push_back(a);
  p.push_back(rank_ns(s, rank));
  return p;
}

int testbed_run_with(const TestbedSpec& s, const std::string& delayer, const std::string& link_log,
                     const std::function<int()>& job) {
  testbed_up(s, delayer);
  int rc = 1;
  try {
    rc = job();
  } catch (...) {
    testbed_down(s, link_log);
    throw;
  }
  testbed_down(s, link_log);
  return rc;
}

int testbed_run(const TestbedSpec& s, const std::string& delayer, const std::vector<std::string>& command, int port,
                const std::string& link_log, int max_restarts) {
  return testbed_run_with(s, delayer, link_log, [&] {
    comm::LaunchOptions o;
    o.nproc = s.world();
    o.master = fmt::format("{}:{}", rank_address(s, 0), port);
    o.command = command;
    o.max_restarts = max_restarts;
    for (int i = 0; i < s.world(); ++i) o.prefix.push_back(rank_prefix(s, i));
    return comm::launch(o);
  });
}

}  // namespace slm::testbed
