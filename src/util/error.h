// util/error.h: the one error type for user-facing failures (missing or corrupt files, bad values).
// Owns: UserError and JobError. Thrown where the problem is found, with a one-line message that names the file
// or option and the problem; caught only in cli/main.cpp, which prints it and exits non-zero.
// Internal invariants are not UserErrors: they use assert/TORCH_CHECK and indicate a bug.
#pragma once
#include <stdexcept>
#include <string>

namespace slm {

struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A failure caused by another process of the job, not by this one's input: a peer died, hung or
// never arrived at rendezvous. Exit code 4 (cli/main.cpp), which `slm launch --max-restarts`
// restarts; other UserErrors (exit 1: bad input, a full disk, divergence) and usage errors (exit
// 2) are not restarted, since they would fail the same way again.
struct JobError : UserError {
  using UserError::UserError;
};
inline constexpr int kExitJobError = 4;

}  // namespace slm
