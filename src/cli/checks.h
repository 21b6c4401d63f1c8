// cli/checks.h: the declared ranges of numeric command-line options, in one style of message
// ("--world: must be at least 1 (got 0)"). Every floating-point option must also be finite:
// require_finite_numbers (main.cpp) adds that check to all of them at once.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <limits>
#include <string>

namespace slm::cli {

// A value in [lo, hi]; the message names the side that was crossed.
CLI::Validator in_range(double lo, double hi);
inline CLI::Validator at_least(double lo) { return in_range(lo, std::numeric_limits<double>::infinity()); }
// Strictly above lo (for times and rates, where 0 makes no sense).
CLI::Validator above(double lo);

// Adds "a finite number" to every FLOAT option of app and its subcommands, recursively.
void require_finite_numbers(CLI::App& app);

}  // namespace slm::cli
