// testbed/elastic_sites.h: `slm testbed run --elastic MIN`: each site of the testbed acts as one
// machine of an elastic job (comm/elastic.h). One launcher per site, each a child process of the
// testbed command, with the site's ranks in their namespaces; site 0's launcher serves the
// launchers' rendezvous on this machine's loopback, while the ranks reach rank 0's store inside
// the testbed. Killing a site's launcher (its pid is printed; SIGKILL takes its ranks with it)
// is losing that site: the job goes on with the others after the rejoin timeout, re-planned and
// resharded by `slm train`.
#pragma once
#include <string>
#include <vector>

#include "testbed/spec.h"

namespace slm::testbed {

struct ElasticSites {
  int min_sites = 1;             // go on while at least this many sites remain
  int max_restarts = 0;          // failures the job may restart from
  double rejoin_timeout_s = 30;  // how long a round waits for a site that is gone
};

// Runs `command` on every rank of the (already up) testbed; returns site 0's launcher's exit code.
// UserError when the sites do not all have the same number of ranks, or MIN is out of range.
int run_elastic_sites(const TestbedSpec& s, const std::vector<std::string>& command, const ElasticSites& e);

}  // namespace slm::testbed
