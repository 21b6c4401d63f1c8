// cli/commands.h: the subcommands of `slm`, each registered on the CLI11 app by its own file.
// Owns: the registration functions and the corpus options shared by several subcommands.
#pragma once
#include <CLI/CLI.hpp>

#include "data/corpus.h"

namespace slm::cli {

void add_tokenizer_commands(CLI::App& app);  // tokenizer_cmd.cpp
void add_data_commands(CLI::App& app);       // data_cmd.cpp
void add_train_command(CLI::App& app);       // train_cmd.cpp
void add_export_command(CLI::App& app);      // export_cmd.cpp
void add_eval_commands(CLI::App& app);       // eval_cmd.cpp: eval, generate
void add_report_command(CLI::App& app);      // report_cmd.cpp
void add_launch_command(CLI::App& app);      // launch_cmd.cpp
void add_plan_commands(CLI::App& app);       // plan_cmd.cpp: plan make, plan check
void add_testbed_command(CLI::App& app);     // testbed_cmd.cpp: testbed up, down, run
void add_probe_command(CLI::App& app);       // probe_cmd.cpp

// --dp --tp --pp --virtual-stages --micro-batches --schedule --zero, appended to `sets` as
// "parallel.<key>=<value>" overrides (plan_cmd.cpp).
void add_layout_flags(CLI::App* cmd, std::vector<std::string>& sets);

// --format, --separator, --jsonl-field (corpus_options.cpp).
void add_corpus_options(CLI::App* cmd, data::CorpusOptions& o);

}  // namespace slm::cli
