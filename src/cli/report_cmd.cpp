// cli/report_cmd.cpp: `slm report RUN`: summary table on stdout, plots in RUN/report/.
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "report/report.h"

namespace slm::cli {

void add_report_command(CLI::App& app) {
  auto run = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("report", "summary table and loss/throughput plots (SVG, PNG) of a run");
  cmd->add_option("run", *run, "run directory")->required();
  cmd->callback([run] {
    std::string out = report::write_report(*run);
    std::printf("%s\nplots: %s/loss.svg, %s/throughput.svg (and .png); summary: %s/summary.md\n",
                report::summary_table(report::summarize(*run)).c_str(), out.c_str(), out.c_str(), out.c_str());
  });
}

}  // namespace slm::cli
