// cli/checks.cpp: see checks.h.
#include "cli/checks.h"

#include <fmt/format.h>

#include <cmath>
#include <optional>

namespace slm::cli {
namespace {

// The option's text as a number, or nullopt when it is not one (CLI11 reports that itself).
std::optional<double> number(const std::string& s) {
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace

CLI::Validator in_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& s) -> std::string {
        auto v = number(s);
        if (!v) return "";
        if (std::isinf(hi) && !(*v >= lo)) return fmt::format("must be at least {} (got {})", lo, s);
        if (!(*v >= lo && *v <= hi)) return fmt::format("must be between {} and {} (got {})", lo, hi, s);
        return "";
      },
      std::isinf(hi) ? fmt::format(">= {}", lo) : fmt::format("{}..{}", lo, hi));
}

CLI::Validator above(double lo) {
  return CLI::Validator(
      [lo](std::string& s) -> std::string {
        auto v = number(s);
        return v && !(*v > lo) ? fmt::format("must be more than {} (got {})", lo, s) : "";
      },
      fmt::format("> {}", lo));
}

void require_finite_numbers(CLI::App& app) {
  CLI::Validator finite(
      [](std::string& s) -> std::string {
        auto v = number(s);
        return v && !std::isfinite(*v) ? fmt::format("must be a finite number (got {})", s) : "";
      },
      "");
  for (CLI::Option* o : app.get_options())
    if (o->get_type_name() == "FLOAT") o->check(finite);
  for (CLI::App* sub : app.get_subcommands({})) require_finite_numbers(*sub);
}

}  // namespace slm::cli
