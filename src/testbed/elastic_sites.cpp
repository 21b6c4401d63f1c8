// testbed/elastic_sites.cpp: see elastic_sites.h.
#include "testbed/elastic_sites.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fmt/format.h>

#include "comm/elastic.h"
#include "testbed/netns.h"
#include "util/error.h"

namespace slm::testbed {

int run_elastic_sites(const TestbedSpec& s, const std::vector<std::string>& command, const ElasticSites& e) {
  const int sites = static_cast<int>(s.sites.size());
  if (e.min_sites < 1 || e.min_sites > sites)
    throw UserError(fmt::format("testbed: --elastic {} must be between 1 and the {} sites", e.min_sites, sites));
  const int per = s.sites[0].ranks;
  for (const auto& site : s.sites)
    if (site.ranks != per)
      throw UserError(fmt::format("testbed: --elastic needs the same number of ranks at every site (site {} has {}, "
                                  "site {} {})",
                                  site.name, site.ranks, s.sites[0].name, per));
  comm::LaunchOptions base;
  base.nproc = per;
  base.nnodes = sites;
  base.min_nodes = e.min_sites;
  base.master = fmt::format("127.0.0.1:{}", comm::free_port(false));
  base.rank_addr = rank_address(s, 0);
  base.command = command;
  base.max_restarts = e.max_restarts;
  base.rejoin_timeout_s = e.rejoin_timeout_s;
  comm::catch_launcher_signals();
  std::vector<pid_t> kids;
  for (int k = 0; k < sites; ++k) {
    comm::LaunchOptions o = base;
    o.node_rank = k;
    for (int i = 0; i < per; ++i) o.prefix.push_back(rank_prefix(s, k * per + i));
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) throw UserError("testbed: fork failed");
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
      int rc = 1;
      try {
        rc = comm::launch_elastic(o);
      } catch (const UserError& err) {
        std::fprintf(stderr, "slm: error: %s\n", err.what());
      } catch (const std::exception& err) {
        std::fprintf(stderr, "slm: internal error: %s\n", err.what());
        rc = 3;
      }
      std::fflush(stdout);
      std::fflush(stderr);
      ::_exit(rc);
    }
    kids.push_back(pid);
    std::fprintf(stderr, "testbed: site %s: launcher pid %d (SIGKILL it to lose the site)\n",
                 s.sites[static_cast<size_t>(k)].name.c_str(), pid);
  }
  // Wait for every site's launcher; a signal to this command goes to each of them (they forward it).
  std::vector<int> code(kids.size(), -1);
  int forwarded = 0;
  for (size_t left = kids.size(); left > 0;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    for (size_t k = 0; k < kids.size(); ++k)
      if (pid == kids[k]) {
        code[k] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        --left;
      }
    if (pid <= 0) ::usleep(100000);
    if (const int sig = comm::launcher_signal(); sig && sig != forwarded) {
      forwarded = sig;
      for (size_t k = 0; k < kids.size(); ++k)
        if (code[k] < 0) ::kill(kids[k], sig);
    }
  }
  return code[0];
}

}  // namespace slm::testbed
