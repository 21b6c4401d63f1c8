// comm/elastic.h: jobs across machines that restart, shrink and grow (issue 17):
// `slm launch --nnodes MIN:MAX --node-rank 0|other --master HOST:PORT --max-restarts N`.
// One launcher per machine. The one started with --node-rank 0 (the host) serves a c10d TCPStore at
// --master for the launchers (the ranks get a store of their own, on a fresh port, each round).
// The job runs in rounds. A round waits for MAX machines, or for --rejoin-timeout once MIN are in
// (--join-timeout for the first MIN), numbers the machines (the host is machine 0, the others in the
// order they joined) and runs their ranks with SLM_RESTART_COUNT = the round, so `slm train`
// resumes from its newest checkpoint, resharded onto the new world. A round ends when:
//  - every rank finished: the job is done;
//  - a rank failed, or a machine stopped answering (its ranks' peers fail): every launcher stops
//    its ranks and the next round starts with the machines that come back (the dead one does not:
//    the job shrinks after --rejoin-timeout); the host counts these against --max-restarts;
//  - a machine asked to join a full round while fewer than MAX run: every rank is sent SIGTERM
//    (`slm train` saves a checkpoint at the same step on every rank) and the next round grows.
// The host is the one machine the job cannot lose (as with torchrun's c10d rendezvous): without it
// the others stop with a one-line error. Every machine must run the same number of ranks.
#pragma once
#include "comm/launch.h"

namespace slm::comm {

// Runs this machine's part of an elastic job (o.min_nodes > 0, o.nnodes = MAX); returns the exit
// code as launch() does. UserError on bad options, a lost host, or fewer than MIN machines.
int launch_elastic(const LaunchOptions& o);

}  // namespace slm::comm
