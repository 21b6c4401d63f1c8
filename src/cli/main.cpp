// cli/main.cpp: the `slm` command line: builds the CLI11 app from the subcommand files, runs it,
// and turns every failure into one line on stderr and an exit code: 1 for a user error (bad input,
// a file or disk problem: UserError, filesystem_error, out of memory), 2 for a command-line usage
// error, 3 for an internal error (a bug), 4 for a peer's failure (JobError: a rank of the job died,
// hung or never arrived). Signals end with 128 + the signal (130 after Ctrl-C).
#include <torch/version.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <utility>
#include <vector>

#include "cli/checks.h"
#include "cli/commands.h"
#include "host/runtime.h"
#include "util/error.h"
#include "util/interrupt.h"

static int run_command(int argc, char** argv) {
  // Every command that may compute (`launch` too: its ranks inherit the settings, and an elastic
  // launcher's c10d store logs through glog).
  if (argc > 1 && slm::host::runs_compute(argv[1])) slm::host::reexec_with_blas_env(argc, argv);
  slm::host::configure_process();
  CLI::App app{
      "slm: pretrain small GPT-2-class language models on your own corpus and cluster.\n"
      "Run `slm <command> --help` for the options of each command; `slm doctor` checks this machine.",
      "slm"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("slm 0.1.0 (LibTorch ") + TORCH_VERSION + ")");
  // The commands grouped by what a user does, in the order `slm --help` lists them.
  const std::pair<const char*, void (*)(CLI::App&)> commands[] = {
      {"Prepare a corpus", slm::cli::add_tokenizer_commands},
      {"Prepare a corpus", slm::cli::add_data_commands},
      {"Train", slm::cli::add_train_command},
      {"Run on many machines", slm::cli::add_launch_command},
      {"Run on many machines", slm::cli::add_testbed_command},
      {"Run on many machines", slm::cli::add_probe_command},
      {"Plan a layout", slm::cli::add_plan_commands},
      {"Plan a layout", slm::cli::add_profile_command},
      {"Evaluate and use a model", slm::cli::add_eval_commands},
      {"Evaluate and use a model", slm::cli::add_report_command},
      {"Evaluate and use a model", slm::cli::add_export_command},
      {"Evaluate and use a model", slm::cli::add_embed_command},
      {"Evaluate and use a model", slm::cli::add_search_command},
      {"Check this machine", slm::cli::add_doctor_command},
  };
  for (const auto& [group, add] : commands) {
    const size_t before = app.get_subcommands([](CLI::App*) { return true; }).size();
    add(app);
    const std::vector<CLI::App*> subs = app.get_subcommands([](CLI::App*) { return true; });
    for (size_t i = before; i < subs.size(); ++i) subs[i]->group(group);
  }
  slm::cli::require_finite_numbers(app);
  slm::install_interrupt_handlers();
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {  // a command's own exit code (e.g. 130 after SIGINT)
    return e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::fprintf(stderr, "slm: usage error: %s (see --help)\n", e.what());
    return 2;
  } catch (const slm::JobError& e) {  // a peer's failure: `slm launch --max-restarts` restarts it
    std::fprintf(stderr, "slm: error: %s\n", e.what());
    return slm::kExitJobError;
  } catch (const slm::UserError& e) {
    std::fprintf(stderr, "slm: error: %s\n", e.what());
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {  // read-only, full, missing, not a folder
    std::string where = e.path1().empty() ? "" : e.path1().string() + ": ";
    std::fprintf(stderr, "slm: error: %s%s\n", where.c_str(), e.code().message().c_str());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "slm: error: out of memory (try a smaller model, batch or micro-batch)\n");
    return 1;
  } catch (const std::exception& e) {  // a bug: still one line (LibTorch's errors carry a backtrace)
    const std::string what = e.what();
    if (const std::string oom = slm::allocation_failure(what); !oom.empty()) {  // LibTorch's allocators
      std::fprintf(stderr, "slm: error: out of memory: %s (try a smaller model, batch or micro-batch)\n", oom.c_str());
      return 1;
    }
    std::fprintf(stderr, "slm: internal error: %s\n", what.substr(0, what.find('\n')).c_str());
    return 3;
  }
  return 0;
}

// Once the command has returned, everything it made is closed and saved (files, checkpoints, its
// process group), so slm ends without running the libraries' static destructors: LibTorch's undo
// every operator registration one by one, ~0.08 s of CPU per process (each rank of a job, each
// command). Under AddressSanitizer the normal exit stays, for its leak check.
int main(int argc, char** argv) {
  const int rc = run_command(argc, argv);
#if defined(__SANITIZE_ADDRESS__)
  return rc;
#else
  std::fflush(nullptr);
  std::_Exit(rc);
#endif
}
