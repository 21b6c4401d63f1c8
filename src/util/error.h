// util/error.h: the one error type for user-facing failures (missing or corrupt files, bad values).
// Owns: UserError, JobError and allocation_failure. Thrown where the problem is found, with a one-line message that names the file
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

// LibTorch's words where an allocation failed (not a bug: the machine ran out, exit 1): its CPU
// allocator's "can't allocate memory: you tried to allocate N bytes ...", CUDA's "CUDA out of
// memory. Tried to allocate ...", to the end of the line; "" for any other message.
inline std::string allocation_failure(const std::string& what) {
  for (const char* mark : {"can't allocate memory", "CUDA out of memory"})
    if (const size_t at = what.find(mark); at != std::string::npos) return what.substr(at, what.find('\n', at) - at);
  return "";
}

}  // namespace slm
