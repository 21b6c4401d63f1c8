// parallel/sync_config.cpp: see sync_config.h.
#include "parallel/sync_config.h"

#include <fmt/format.h>

#include <cmath>

#include "util/error.h"

namespace slm::parallel {

void validate(const SyncConfig& c) {
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw UserError("sync: " + msg);
  };
  need(c.mode == "step" || c.mode == "diloco", fmt::format("mode \"{}\" is not one of step, diloco", c.mode));
  need(c.inner_steps >= 1, fmt::format("inner_steps {} must be >= 1", c.inner_steps));
  need(std::isfinite(c.outer_lr) && c.outer_lr > 0, fmt::format("outer_lr {} must be > 0", c.outer_lr));
  need(std::isfinite(c.outer_momentum) && c.outer_momentum >= 0 && c.outer_momentum < 1,
       fmt::format("outer_momentum {} must be in [0, 1)", c.outer_momentum));
  need(c.fragments >= 1, fmt::format("fragments {} must be >= 1", c.fragments));
  need(c.fragments <= c.inner_steps,
       fmt::format("fragments {} must be <= inner_steps {} (one fragment starts its sync per step at most)",
                   c.fragments, c.inner_steps));
  need(c.delay >= 0 && c.delay < c.inner_steps,
       fmt::format("delay {} must be in [0, inner_steps = {})", c.delay, c.inner_steps));
  need(std::isfinite(c.mix) && c.mix >= 0 && c.mix <= 1, fmt::format("mix {} must be in [0, 1]", c.mix));
  need(c.compress == "none" || c.compress == "bf16" || c.compress == "int8",
       fmt::format("compress \"{}\" is not one of none, bf16, int8", c.compress));
  need(c.int8_chunk >= 1, fmt::format("int8_chunk {} must be >= 1", c.int8_chunk));
}

}  // namespace slm::parallel
