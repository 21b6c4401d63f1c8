// cli/commands.h: the subcommands of `slm`, each registered on the CLI11 app by its own file.
// Owns: the registration functions and the corpus options shared by several subcommands.
#pragma once
#include <CLI/CLI.hpp>

#include "data/corpus.h"
#include "parallel/plan.h"
#include "planner/cost_model.h"
#include "testbed/spec.h"
#include "train/config.h"

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
void add_profile_command(CLI::App& app);     // profile_cmd.cpp
void add_plan_auto_command(CLI::App& plan);  // plan_auto_cmd.cpp: plan auto (under `slm plan`)
void add_embed_command(CLI::App& app);       // embed_cmd.cpp: embed, embed eval
void add_embed_tune_command(CLI::App& embed);  // embed_tune_cmd.cpp: embed tune (under `slm embed`)
void add_search_command(CLI::App& app);      // search_cmd.cpp
void add_doctor_command(CLI::App& app);      // doctor_cmd.cpp

// slm-delayer, the testbed's link emulator, next to the slm binary (testbed_cmd.cpp).
std::string delayer_path();

// --dp --tp --pp --virtual-stages --micro-batches --schedule --zero, appended to `sets` as
// "parallel.<key>=<value>" overrides (plan_cmd.cpp).
void add_layout_flags(CLI::App* cmd, std::vector<std::string>& sets);

// The configuration's model, with the vocabulary from its dataset when model.vocab_size is 0
// (GPT-2's 50257 when there is no dataset either) (plan_cmd.cpp).
train::Config model_config(const std::string& config, const std::vector<std::string>& set);

// One line: the prediction's step time and its terms.
std::string describe_prediction(const planner::Prediction& p);

// --format, --separator, --jsonl-field (corpus_options.cpp).
void add_corpus_options(CLI::App* cmd, data::CorpusOptions& o);

}  // namespace slm::cli
