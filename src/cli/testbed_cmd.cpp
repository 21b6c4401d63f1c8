// cli/testbed_cmd.cpp: `slm testbed up|down|run FILE`: an emulated wide-area cluster on this
// machine (testbed/spec.h for the file, testbed/netns.h for what is built). Needs root.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <fmt/format.h>
#include <memory>

#include "cli/checks.h"
#include "cli/commands.h"
#include "testbed/elastic_sites.h"
#include "testbed/lock.h"
#include "testbed/netns.h"
#include "testbed/spec.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::cli {
namespace {

struct TestbedArgs {
  std::string file;
  int port = 29500;
  int max_restarts = 0;
  int elastic = 0;  // --elastic MIN: sites as the machines of an elastic job (0 = off)
  double rejoin_timeout_s = 30;
  std::string link_log;
  std::vector<std::string> command;
};

testbed::TestbedSpec load(const std::string& file) {
  if (!path_exists(file)) throw UserError(fmt::format("{}: no such file", file));
  testbed::TestbedSpec s = testbed::parse_testbed(read_file(file), file);
  testbed::check_emulatable(s, file);
  return s;
}


void print_layout(const testbed::TestbedSpec& s) {
  for (int r = 0; r < s.world(); ++r)
    std::fprintf(stderr, "testbed: rank %d in %s-r%d, site %s, address %s\n", r, s.name.c_str(), r,
                 s.sites[static_cast<size_t>(testbed::site_of(s, r))].name.c_str(), testbed::rank_address(s, r).c_str());
}

}  // namespace

std::string delayer_path() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string exe = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "slm";
  return exe.substr(0, exe.rfind('/') + 1) + "slm-delayer";
}

void add_testbed_command(CLI::App& app) {
  auto* tb = app.add_subcommand("testbed", "emulate a wide-area cluster on this machine (network namespaces; root)");
  tb->require_subcommand(1);
  auto a = std::make_shared<TestbedArgs>();
  auto* up = tb->add_subcommand("up", "build the namespaces, links and delays of FILE (leaves them up)");
  up->add_option("file", a->file, "testbed description (TOML; docs/testbed.md)")->required();
  up->callback([a] {
    testbed::TestbedSpec s = load(a->file);
    testbed::TestbedLock lock(s.name);
    testbed::testbed_up(s, delayer_path());
    print_layout(s);
    std::printf("testbed %s is up: %d ranks in %zu sites; `slm testbed down %s` removes it\n", s.name.c_str(),
                s.world(), s.sites.size(), a->file.c_str());
  });
  auto* down = tb->add_subcommand("down", "remove everything `up` or `run` built for FILE");
  down->add_option("file", a->file, "testbed description")->required();
  down->callback([a] {
    testbed::TestbedSpec s = load(a->file);
    if (::geteuid() != 0) throw UserError("testbed: needs root (network namespaces, tc, iptables); run it with sudo");
    testbed::TestbedLock lock(s.name);
    testbed::testbed_down(s);
  });
  auto* run = tb->add_subcommand("run", "bring FILE up, run CMD once per rank in its namespace, tear down");
  run->add_option("file", a->file, "testbed description")->required();
  run->add_option("--port", a->port, "rendezvous port on rank 0 (with --elastic: a free port each round)")->capture_default_str()->check(in_range(1, 65535));
  run->add_option("--link-log", a->link_log, "keep the emulated links' byte counters (one line per link per second)");
  run->add_option("--max-restarts", a->max_restarts,
                  "after a rank fails, start every rank again (as slm launch --max-restarts)")
      ->capture_default_str()->check(at_least(0));
  run->add_option("--elastic", a->elastic,
                  "run each site as one machine of an elastic job that goes on while at least MIN sites remain "
                  "(slm launch --nnodes MIN:SITES); a site's launcher pid is printed")
      ->check(at_least(1));
  run->add_option("--rejoin-timeout", a->rejoin_timeout_s, "with --elastic: seconds to wait for a lost site")
      ->capture_default_str()->check(at_least(0));
  run->add_option("command", a->command, "command (after --), e.g. -- slm train -c cfg.toml")->required();
  run->callback([a] {
    testbed::TestbedSpec s = load(a->file);
    testbed::TestbedLock lock(s.name);
    print_layout(s);
    const int rc =
        a->elastic > 0
            ? testbed::testbed_run_with(s, delayer_path(), a->link_log, [&] {
                return testbed::run_elastic_sites(s, a->command, {a->elastic, a->max_restarts, a->rejoin_timeout_s});
              })
            : testbed::testbed_run(s, delayer_path(), a->command, a->port, a->link_log, a->max_restarts);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace slm::cli
