// cli/report_cmd.cpp: `slm report RUN`: summary table on stdout, plots in RUN/report/; a traced
// run's (log.trace_steps) per-rank time table and merged timeline; a profiled run's
// (log.profile_steps) tables. `slm report TRACE.json`: the tables of one profiler trace (slm's or
// torch.profiler's).
#include <cstdio>
#include <filesystem>
#include <memory>

#include "cli/commands.h"
#include "report/profile.h"
#include "report/report.h"
#include "report/trace.h"

namespace slm::cli {

void add_report_command(CLI::App& app) {
  auto run = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("report", "summary table and loss/throughput plots (SVG, PNG) of a run");
  cmd->add_option("run", *run, "run directory, or a profiler trace (.json) to sum up")->required();
  cmd->callback([run] {
    if (std::filesystem::is_regular_file(*run)) {  // a trace: RUN/profile/rank_K.json, or PyTorch's
      std::printf("%s", report::profile_table(report::read_profile(*run)).c_str());
      return;
    }
    std::string no_plots;
    std::string out = report::write_report(*run, &no_plots);
    std::printf("%s\n", report::summary_table(report::summarize(*run)).c_str());
    if (no_plots.empty())
      std::printf("plots: %s/loss.svg, %s/throughput.svg (and .png); summary: %s/summary.md\n", out.c_str(), out.c_str(),
                  out.c_str());
    else
      std::printf("plots: none (%s); summary: %s/summary.md\n", no_plots.c_str(), out.c_str());
    const auto traces = report::read_traces(*run);  // log.trace_steps
    if (!traces.empty() && report::merge_traces(*run, out + "/trace.json"))
      std::printf("\n%s\ntimeline of the traced steps, every rank: %s/trace.json (ui.perfetto.dev, chrome://tracing)\n",
                  report::trace_table(traces).c_str(), out.c_str());
    for (const std::string& path : report::profile_files(*run))  // log.profile_steps
      std::printf("\nprofile %s (ui.perfetto.dev, chrome://tracing)\n%s", path.c_str(),
                  report::profile_table(report::read_profile(path)).c_str());
  });
}

}  // namespace slm::cli
