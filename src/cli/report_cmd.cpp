// cli/report_cmd.cpp: `slm report RUN`: summary table on stdout, plots in RUN/report/; a traced
// run's (log.trace_steps) per-rank time table and merged timeline.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "report/report.h"
#include "report/trace.h"

namespace slm::cli {

void add_report_command(CLI::App& app) {
  auto run = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("report", "summary table and loss/throughput plots (SVG, PNG) of a run");
  cmd->add_option("run", *run, "run directory")->required();
  cmd->callback([run] {
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
  });
}

}  // namespace slm::cli
