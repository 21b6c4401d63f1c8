// util/error.h: the one error type for user-facing failures (missing or corrupt files, bad values).
// Owns: UserError. Thrown where the problem is found, with a one-line message that names the file
// or option and the problem; caught only in cli/main.cpp, which prints it and exits non-zero.
// Internal invariants are not UserErrors: they use assert/TORCH_CHECK and indicate a bug.
#pragma once
#include <stdexcept>
#include <string>

namespace slm {

struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace slm
