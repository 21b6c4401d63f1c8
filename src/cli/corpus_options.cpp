// cli/corpus_options.cpp: the options that say how input files become documents.
#include "cli/commands.h"

namespace slm::cli {

void add_corpus_options(CLI::App* cmd, data::CorpusOptions& o) {
  cmd->add_option("--format", o.format,
                  "input format: auto (.jsonl/.json files are JSON lines, others text), text, jsonl")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "text", "jsonl"}));
  cmd->add_option("--separator", o.separator,
                  "how a text file splits into documents: '' (one document per file), 'blank' "
                  "(blank lines), 'line' (one per line), or a literal string with \\n \\t escapes, "
                  "e.g. '\\n%\\n' for fortune files")
      ->capture_default_str();
  cmd->add_option("--jsonl-field", o.jsonl_field, "JSON lines: the string field holding the text")
      ->capture_default_str();
}

}  // namespace slm::cli
