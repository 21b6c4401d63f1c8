// cli/report_cmd.cpp: `slm report RUN`: summary table on stdout, plots in RUN/report/; a traced
// run's (log.trace_steps) per-rank time table and merged timeline; a profiled run's
// (log.profile_steps) tables. `slm report TRACE.json...`: the tables of profiler traces (slm's or
// torch.profiler's), several side by side.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "report/profile.h"
#include "report/report.h"
#include "report/trace.h"
#include "util/error.h"

namespace slm::cli {

namespace {
// `slm report TRACE...`: one trace's tables, or several side by side and then each one's.
void report_traces(const std::vector<std::string>& paths) {
  std::vector<report::ProfileSummary> all;
  for (const std::string& p : paths) all.push_back(report::read_profile(p));
  if (all.size() > 1) std::printf("%s\n", report::profile_comparison(all).c_str());
  for (size_t i = 0; i < all.size(); ++i)
    std::printf("%s%s", i > 0 || all.size() > 1 ? "\n" : "", report::profile_table(all[i]).c_str());
}
}  // namespace

void add_report_command(CLI::App& app) {
  auto args = std::make_shared<std::vector<std::string>>();
  auto* cmd = app.add_subcommand("report", "summary table and loss/throughput plots (SVG, PNG) of a run");
  cmd->add_option("run", *args, "run directory; or profiler traces (.json: slm's or torch.profiler's) to sum up "
                                "(several: side by side)")->required();
  cmd->callback([args] {
    if (std::filesystem::is_regular_file(args->front())) {  // traces: RUN/profile/rank_K.json, or PyTorch's
      report_traces(*args);
      return;
    }
    if (args->size() > 1) throw UserError("report: one run directory at a time (several arguments are for traces)");
    const std::string& run = args->front();
    std::string no_plots;
    std::string out = report::write_report(run, &no_plots);
    std::printf("%s\n", report::summary_table(report::summarize(run)).c_str());
    if (no_plots.empty())
      std::printf("plots: %s/loss.svg, %s/throughput.svg (and .png); summary: %s/summary.md\n", out.c_str(), out.c_str(),
                  out.c_str());
    else
      std::printf("plots: none (%s); summary: %s/summary.md\n", no_plots.c_str(), out.c_str());
    const auto traces = report::read_traces(run);  // log.trace_steps
    if (!traces.empty() && report::merge_traces(run, out + "/trace.json"))
      std::printf("\n%s\ntimeline of the traced steps, every rank: %s/trace.json (ui.perfetto.dev, chrome://tracing)\n",
                  report::trace_table(traces).c_str(), out.c_str());
    const std::vector<std::string> profiles = report::profile_files(run);  // log.profile_steps
    if (profiles.size() == 1)
      std::printf("\nprofile %s (ui.perfetto.dev, chrome://tracing)\n%s", profiles[0].c_str(),
                  report::profile_table(report::read_profile(profiles[0])).c_str());
    if (profiles.size() > 1) {  // the ranks side by side; each one's table by `slm report TRACE`
      std::vector<report::ProfileSummary> all;
      for (const std::string& p : profiles) all.push_back(report::read_profile(p));
      std::printf("\nprofiles %s/profile/rank_*.json (ui.perfetto.dev, chrome://tracing; each one's tables: "
                  "`slm report TRACE`)\n%s", run.c_str(), report::profile_comparison(all).c_str());
    }
  });
}

}  // namespace slm::cli
