// cli/main.cpp: the `slm` command line: builds the CLI11 app from the subcommand files, runs it,
// and turns any UserError into one line on stderr and exit code 1 (2 for command-line errors,
// 3 for an internal error, also reported in one line).
#include <torch/version.h>

#include <cstdio>

#include "cli/commands.h"
#include "util/error.h"
#include "train/runtime.h"
#include "util/interrupt.h"

int main(int argc, char** argv) {
  if (argc > 1 && (std::string(argv[1]) == "train" || std::string(argv[1]) == "eval"))
    slm::train::reexec_with_blas_env(argc, argv);
  slm::train::configure_process();
  CLI::App app{
      "slm: pretrain small GPT-2-class language models on your own corpus and cluster.\n"
      "Run `slm <command> --help` for the options of each command.",
      "slm"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("slm 0.1.0 (LibTorch ") + TORCH_VERSION + ")");
  slm::cli::add_tokenizer_commands(app);
  slm::cli::add_data_commands(app);
  slm::cli::add_train_command(app);
  slm::cli::add_export_command(app);
  slm::cli::add_eval_commands(app);
  slm::cli::add_report_command(app);
  slm::cli::add_launch_command(app);
  slm::cli::add_plan_commands(app);
  slm::cli::add_testbed_command(app);
  slm::cli::add_probe_command(app);
  slm::cli::add_profile_command(app);
  slm::cli::add_embed_command(app);
  slm::cli::add_search_command(app);
  slm::install_interrupt_handlers();
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {  // a command's own exit code (e.g. 130 after SIGINT)
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const slm::UserError& e) {
    std::fprintf(stderr, "slm: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {  // a bug or a resource limit: still one line, no abort
    std::fprintf(stderr, "slm: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
