// cli/plan_auto_cmd.cpp: `slm plan auto`: choose the layout for a cluster. Parses the flags, loads
// the planning inputs (autoplan/inputs.h: the cluster file, optionally `slm probe`'s links and
// `slm profile`'s compute, else the device table), searches every layout (planner/search.h),
// optionally runs the top K on the real ranks (autoplan/measure.h), and prints the top K with their
// predictions, why the other layout families lost and the study heuristic's pick; writes the best
// plan with the settings it needs ([set], planner/plan_file.h).
#include <algorithm>
#include <cstdio>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <memory>
#include <nlohmann/json.hpp>

#include "autoplan/auto_plan.h"
#include "autoplan/inputs.h"
#include "autoplan/measure.h"
#include "cli/commands.h"
#include "planner/plan_file.h"
#include "planner/search.h"
#include "testbed/spec.h"
#include "train/trainer.h"
#include "util/error.h"

namespace slm::cli {
namespace {

struct AutoArgs {
  std::string config, cluster, topology, profile, out, strategy = "search", objective;
  std::vector<std::string> set;
  int top = 5, measure = 0, measure_steps = 6, measure_rounds = 2;
  bool json = false, allow_lossy = false, all_ranks = false;
};

std::string mib(double b) { return fmt::format("{:.1f}", b / (1 << 20)); }
std::string gib(double b) { return fmt::format("{:.2f}", b / (1024.0 * 1024 * 1024)); }

nlohmann::json to_json(const planner::Ranked& r, const planner::Cluster& cl) {
  const planner::Prediction& p = r.p;
  return {{"layout", planner::describe_candidate(r.c)}, {"sites", planner::sites_used(cl, r.c.ranks)},
          {"ranks", r.c.ranks},    {"step_s", p.step_s},  {"tokens_per_s", p.tokens_per_s},
          {"tflops_per_device", p.tflops_per_device},     {"tokens_per_dollar", p.tokens_per_dollar},
          {"price_per_hour", p.price_per_hour},           {"memory_bytes_max", *std::max_element(p.memory_bytes.begin(), p.memory_bytes.end())},
          {"cross_site_bytes", p.cross_site_bytes},       {"bubble", p.bubble},
          {"pipeline_s", p.pipeline_s}, {"dp_comm_s", p.dp_comm_s}, {"optimizer_s", p.optimizer_s},
          {"zero_gather_s", p.zero_gather_s}, {"tied_s", p.tied_s}, {"norm_s", p.norm_s}, {"fits", p.fits}};
}

void print_table(const std::vector<planner::Ranked>& rows, const planner::Cluster& cl) {
  std::printf("  #  %-72s %8s %9s %8s %10s %8s %9s %6s  %s\n", "layout", "step s", "tokens/s", "TFLOP/s", "tokens/$",
              "GiB max", "MiB site", "bubble", "sites");
  for (size_t i = 0; i < rows.size(); ++i) {
    const planner::Prediction& p = rows[i].p;
    const double mem = *std::max_element(p.memory_bytes.begin(), p.memory_bytes.end());
    std::printf("  %zu  %-72s %8.3f %9.0f %8.4f %10.3g %8s %9s %5.0f%%  %s\n", i + 1,
                planner::describe_candidate(rows[i].c).c_str(), p.step_s, p.tokens_per_s, p.tflops_per_device,
                p.tokens_per_dollar, gib(mem).c_str(), mib(p.cross_site_bytes).c_str(), 100 * p.bubble,
                planner::sites_used(cl, rows[i].c.ranks).c_str());
  }
}

}  // namespace

std::string describe_prediction(const planner::Prediction& p) {
  return fmt::format("predicted {:.3f} s per step ({:.0f} tokens/s, {:.4f} TFLOP/s per device, {:.3g} tokens/$): "
                     "pipeline {:.3f} s, exposed gradient reduction {:.3f} s, optimizer {:.3f} s, ZeRO gather {:.3f} s, "
                     "tied embedding {:.3f} s, gradient norm {:.3f} s, CPU floor of shared cores {:.3f} s; bubble {:.0f}%, {:.1f} MiB across "
                     "sites{}",
                     p.step_s, p.tokens_per_s, p.tflops_per_device, p.tokens_per_dollar, p.pipeline_s, p.dp_comm_s,
                     p.optimizer_s, p.zero_gather_s, p.tied_s, p.norm_s, p.cpu_bound_s, 100 * p.bubble,
                     p.cross_site_bytes / (1 << 20), p.fits ? "" : fmt::format("; does not fit: rank {} is {:.2f} GiB over", p.tightest_rank,
                                               p.tightest_over_bytes / (1024.0 * 1024 * 1024)));
}

namespace {

// What `slm plan auto` found: the search's top candidates (or the study heuristic's pick), the
// measured step times where asked (-1: not run), the chosen candidate and which ranks it uses.
struct Found {
  planner::SearchOptions o;
  planner::SearchResult r;
  planner::Ranked heuristic, chosen;
  autoplan::Measured m;
  std::string used;
};

// The search's options: the configuration's (autoplan::search_options), then the flags.
planner::SearchOptions search_options(const AutoArgs& a, const train::Config& cfg) {
  planner::SearchOptions o = autoplan::search_options(cfg);
  if (!a.objective.empty()) o.objective = a.objective;
  if (o.objective != "time" && o.objective != "cost") throw UserError("plan auto: --objective must be time or cost");
  o.allow_lossy = a.allow_lossy || o.allow_lossy;
  o.subsets = !a.all_ranks;  // the flag alone: planner.all_ranks is for training's plan = "auto"
  o.top = std::max(a.top, a.measure);
  return o;
}

// Which of the cluster's ranks the chosen plan uses, and how to start them.
std::string ranks_used(const planner::Candidate& c, const planner::Cluster& cl) {
  if (c.ranks.size() == static_cast<size_t>(cl.world())) return fmt::format("all {} ranks", cl.world());
  const std::string which = fmt::format("{} of the {} ranks: cluster ranks [{}] (sites {}); ", c.ranks.size(),
                                        cl.world(), fmt::join(c.ranks, ", "), planner::sites_used(cl, c.ranks));
  const std::string start = c.ranks[0] == 0 ? "start the whole cluster (the plan's job_ranks: the others exit at "
                                              "start) or only those"
                                            : "start only those";
  return which + fmt::format("{}, numbered 0..{} in this order", start, c.ranks.size() - 1);
}

// Searches (or takes the study heuristic's pick), then measures the top K on the real ranks where
// asked and chooses the measured best.
Found find_plan(const AutoArgs& a, const train::Config& cfg, const planner::CostInputs& in,
                const autoplan::PlanningInputs& pi) {
  Found f;
  f.o = search_options(a, cfg);
  f.heuristic = planner::study_heuristic(in, f.o);
  if (a.strategy == "study-heuristic") {
    f.r.top = {f.heuristic};
    f.r.evaluated = 1;
  } else if (a.strategy == "search") {
    f.r = planner::search_plans(in, f.o);
  } else {
    throw UserError("plan auto: --strategy must be search or study-heuristic");
  }
  f.chosen = f.r.top.at(0);
  f.m.step_s.assign(f.r.top.size(), -1);
  f.m.round_medians.resize(f.r.top.size());
  if (a.measure > 0) {
    f.m = autoplan::measure_candidates({a.config, a.set, a.cluster, a.measure, a.measure_steps, a.measure_rounds},
                                       f.r.top, pi.spec, pi.cluster.world());
    if (f.m.best >= 0) f.chosen = f.r.top[static_cast<size_t>(f.m.best)];
  }
  f.used = ranks_used(f.chosen.c, pi.cluster);
  return f;
}

void print_json(const AutoArgs& a, const Found& f, const autoplan::PlanningInputs& pi) {
  const planner::Cluster& cl = pi.cluster;
  nlohmann::json j;
  j["cluster"] = a.cluster, j["profile"] = pi.profile_from, j["objective"] = f.o.objective, j["evaluated"] = f.r.evaluated;
  j["search_s"] = f.r.seconds;
  for (size_t i = 0; i < f.r.top.size(); ++i) {
    nlohmann::json row = to_json(f.r.top[i], cl);
    if (f.m.step_s[i] > 0) {
      row["measured_step_s"] = f.m.step_s[i];
      row["measured_round_medians_s"] = f.m.round_medians[i];
    }
    j["top"].push_back(row);
  }
  for (const planner::Loser& l : f.r.losers)
    j["losers"].push_back({{"family", l.family}, {"why", l.why}, {"best", to_json(l.best, cl)}});
  j["study_heuristic"] = to_json(f.heuristic, cl);
  j["chosen"] = to_json(f.chosen, cl);
  if (!a.out.empty()) j["plan_file"] = a.out;
  std::printf("%s\n", j.dump(1).c_str());
}

void print_text(const AutoArgs& a, const Found& f, const autoplan::PlanningInputs& pi, int64_t batch_size) {
  const planner::Cluster& cl = pi.cluster;
  std::printf("plan auto: %d ranks in %zu sites; links from %s; profile: %s; precision %s\n", cl.world(),
              cl.sites.size(), cl.links_from.c_str(), pi.profile_from.c_str(), pi.precision.c_str());
  const planner::MeasuredHops& h = cl.hops;
  if (h.all_reduce.at_1MiB > 0 || h.all_gather.at_1MiB > 0)
    std::printf("ring collectives over the %.2f ms link, per hop as the probe timed them: all-reduce %.2f ms (4 B) to "
                "%.2f ms (1 MiB), all-gather %.2f to %.2f ms\n",
                1e3 * h.link_alpha_s, 1e3 * h.all_reduce.at_4B, 1e3 * h.all_reduce.at_1MiB, 1e3 * h.all_gather.at_4B,
                1e3 * h.all_gather.at_1MiB);
  std::printf("searched %lld layouts in %.3f s; objective: %s; global batch %lld x %lld tokens\n",
              static_cast<long long>(f.r.evaluated), f.r.seconds,
              f.o.objective == "cost" ? "tokens per dollar" : "step time", static_cast<long long>(batch_size),
              static_cast<long long>(pi.seq_len));
  print_table(f.r.top, cl);
  if (a.measure > 0) {
    std::printf("measured (%d round(s) of %d steps each, the median of every round's steps 2..):\n", a.measure_rounds,
                a.measure_steps);
    for (size_t i = 0; i < f.r.top.size() && static_cast<int>(i) < a.measure; ++i)
      std::printf("  %zu  predicted %.3f s, measured %s\n", i + 1, f.r.top[i].p.step_s,
                  f.m.step_s[i] > 0 ? fmt::format("{:.3f} s ({:+.0f}%; rounds {:.3f})", f.m.step_s[i],
                                                  100 * (f.r.top[i].p.step_s / f.m.step_s[i] - 1),
                                                  fmt::join(f.m.round_medians[i], " / ")).c_str()
                                    : "- (not run: it leaves rank 0 out, or it failed)");
  }
  if (!f.r.losers.empty()) std::printf("why the other layouts lost (the best of each):\n");
  for (const planner::Loser& l : f.r.losers)
    std::printf("  %-44s %s (%.3f s)\n", l.family.c_str(), l.why.c_str(), l.best.p.step_s);
  std::printf("study heuristic: %s: %.3f s per step (%+.0f%% vs the pick)\n",
              planner::describe_candidate(f.heuristic.c).c_str(), f.heuristic.p.step_s,
              100 * (f.heuristic.p.step_s / f.chosen.p.step_s - 1));
  std::printf("chosen: %s; uses %s\n", planner::describe_candidate(f.chosen.c).c_str(), f.used.c_str());
  if (!a.out.empty()) std::printf("plan: %s (slm train --set parallel.plan=%s)\n", a.out.c_str(), a.out.c_str());
}

void run_auto(const AutoArgs& a) {
  train::Config cfg = model_config(a.config, a.set);
  model::validate(cfg.model);
  autoplan::PlanningInputs pi = autoplan::load_planning_inputs(cfg, a.cluster, a.topology, a.profile);
  const planner::CostInputs in{&pi.cluster,     &pi.profile, train::model_shape(cfg, pi.precision),
                               pi.seq_len,      cfg.parallel.bucket_mb, cfg.parallel.memory_cap_gb, {}};
  const Found f = find_plan(a, cfg, in, pi);
  const std::string header = fmt::format(
      "slm plan auto --cluster {}: {}\npredicted {:.3f} s per step, {:.0f} tokens/s, {:.1f} MiB across sites per "
      "step\nuses {}",
      a.cluster, planner::describe_candidate(f.chosen.c), f.chosen.p.step_s, f.chosen.p.tokens_per_s,
      f.chosen.p.cross_site_bytes / (1 << 20), f.used);
  if (!a.out.empty()) write_file_atomic(a.out, planner::candidate_to_toml(f.chosen.c, pi.cluster.world(), header));
  if (a.json) print_json(a, f, pi);
  else print_text(a, f, pi, cfg.batch.batch_size);
}

}  // namespace

void add_plan_auto_command(CLI::App& plan) {
  auto a = std::make_shared<AutoArgs>();
  auto* cmd = plan.add_subcommand("auto", "choose the fastest (or cheapest) layout for a cluster: predicted step "
                                          "time of every layout, the best written as a plan");
  cmd->add_option("-c,--config", a->config, "training configuration (model, batch, parallel sections)");
  cmd->add_option("--set", a->set, "override one key, section.key=value (repeatable)");
  cmd->add_option("--cluster", a->cluster, "cluster description: the testbed TOML with device/memory_gb/price_per_hour "
                                            "per site");
  cmd->add_option("--topology", a->topology, "links measured by `slm probe` (override the file's)");
  cmd->add_option("--profile", a->profile, "compute measured by `slm profile` (else the device table)");
  cmd->add_option("--objective", a->objective, "time (step time) or cost (tokens per dollar); default planner.objective");
  cmd->add_option("--strategy", a->strategy, "search, or study-heuristic (the reference study's rule)")->capture_default_str();
  cmd->add_option("--top", a->top, "candidates to show")->capture_default_str()->check(CLI::Range(1, 100));
  cmd->add_flag("--allow-lossy", a->allow_lossy, "may choose bf16 gradients across sites or DiLoCo (sync.inner_steps steps, int8)");
  cmd->add_flag("--all-ranks", a->all_ranks, "use every rank (never leave a site out)");
  cmd->add_option("--measure", a->measure, "run the top K for a few steps on the real ranks; pick the measured best")
      ->check(CLI::Range(0, 20));
  cmd->add_option("--measure-steps", a->measure_steps, "steps per measured run")->capture_default_str()
      ->check(CLI::Range(3, 1000));
  cmd->add_option("--measure-rounds", a->measure_rounds, "rounds over the measured candidates (each judged by the "
                                                         "median of all its rounds' steps)")
      ->capture_default_str()
      ->check(CLI::Range(1, 20));
  cmd->add_flag("--json", a->json, "print JSON instead of the table");
  cmd->add_option("-o,--out", a->out, "write the chosen plan (with its [set] settings) here");
  cmd->callback([a] { run_auto(*a); });
}

}  // namespace slm::cli
