// comm/admission.h: who may join the job, decided at rendezvous over the c10d store before anyone
// counts in (comm/auth.h has the secret and the proofs). Rank 0 publishes a challenge ("none"
// without a secret); every other rank takes an attempt number from a counter, posts
// "<rank> <proof> <address>" under it (the proof bound to that attempt) and waits for rank 0's
// verdict on it; rank 0 reads the attempts as their records appear, in any order, admits one
// proven attempt per rank and refuses the rest (a warning naming the address), until every rank is
// in. A copied proof proves another attempt and is refused like a wrong secret. Owns: admit.
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "comm/compat.h"
#include "comm/env.h"

namespace slm::comm {

// Runs this rank's part under store keys starting with `key`. waited(): seconds since the
// rendezvous began; past join_timeout_s a JobError says what was missing. address: this rank's
// address towards rank 0, for rank 0's warnings ("" on rank 0). UserError when rank 0 refuses
// this rank, or when rank 0 runs without a secret and this rank has one.
void admit(c10d::Store& store, const std::string& key, const LaunchEnv& env, const std::optional<std::string>& secret,
           double join_timeout_s, const std::function<double()>& waited, const std::string& address);

}  // namespace slm::comm
