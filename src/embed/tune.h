// embed/tune.h: contrastive tuning (`slm embed tune`): a pretrained model continues with an
// in-batch-negatives loss on pairs cut from the user's own documents (embed/pairs.h), so that its
// pooled vectors find related text. Owns: TuneOptions and run_tune.
// Data parallel under any launcher: each rank embeds its slice of the global batch, the slices are
// gathered so that every anchor meets every rank's positives (parallel/batch_gather.h), and the
// result equals one process with the same global batch.
// The output folder: model/ (a Hugging Face GPT-2 folder that `slm embed`, `slm embed eval` and
// transformers load, plus optimizer.pt and state.json for --resume; replaced atomically at each
// save), tokenizer/, options.json, metrics.jsonl. The documents `slm embed eval` holds out with
// the same --val-fraction and --seed are never tuned on.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "comm/world.h"
#include "data/corpus.h"
#include "embed/pairs.h"

namespace slm::embed {

struct TuneOptions {
  std::string source;               // run, checkpoint or Hugging Face folder (the pretrained model)
  std::vector<std::string> inputs;  // the corpus, as `slm data prepare` reads it
  data::CorpusOptions corpus;
  std::string out;
  std::string pooling = "mean";
  PairOptions pairs;                // pairs.seed also chooses the held-out documents
  double val_fraction = 0.05;       // held out as `slm embed eval` holds out
  int64_t steps = 200, batch = 64, warmup = 20;  // batch: pairs per step, all ranks together
  double lr = 3e-4, min_lr_ratio = 0.1, temperature = 0.05, weight_decay = 0, grad_clip = 1;
  int64_t save_every = 100;         // 0 = only at the end (and on a signal)
  int64_t stop_at = 0;              // stop (and save) after this step; 0 = run to `steps`
  std::string device = "auto", precision = "fp32";
  int threads = 0;
  bool resume = false;
  comm::DistConfig dist;
};

// UserError (one line) for bad options, a missing model or corpus, too few documents. Returns the
// process exit code: 0, or 130/143 after an orderly stop on SIGINT/SIGTERM (the model saved).
int run_tune(const TuneOptions& o);

}  // namespace slm::embed
