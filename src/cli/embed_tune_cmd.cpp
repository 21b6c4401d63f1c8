// cli/embed_tune_cmd.cpp: `slm embed tune` (contrastive tuning of a pretrained model on the
// user's own corpus; embed/tune.h), registered under `slm embed`. Runs under any launcher
// (`slm launch -n N -- slm embed tune ...`, torchrun, Slurm) as data parallelism.
#include <memory>

#include "cli/checks.h"
#include "cli/commands.h"
#include "embed/tune.h"
#include "util/threads.h"

namespace slm::cli {

void add_embed_tune_command(CLI::App& embed) {
  auto o = std::make_shared<embed::TuneOptions>();
  auto* cmd = embed.add_subcommand(
      "tune", "contrastive tuning: pairs cut from your own documents, in-batch negatives (no labels needed)");
  cmd->add_option("source", o->source, "the pretrained model: run, checkpoint or Hugging Face GPT-2 folder")->required();
  cmd->add_option("inputs", o->inputs, "the corpus (as `slm data prepare` reads it)")->required();
  add_corpus_options(cmd, o->corpus);
  cmd->add_option("-o,--out", o->out, "output folder (model/ inside; `slm embed` and `slm embed eval` take the folder)")
      ->required();
  cmd->add_option("--steps", o->steps, "optimizer steps")->capture_default_str()->check(at_least(1));
  cmd->add_option("--batch", o->batch, "pairs per step, all ranks together (the other pairs are the negatives)")->check(at_least(2))
      ->capture_default_str();
  cmd->add_option("--lr", o->lr, "peak learning rate (AdamW)")->capture_default_str()->check(above(0));
  cmd->add_option("--warmup", o->warmup, "linear warm-up steps, then cosine decay")->capture_default_str()->check(at_least(0));
  cmd->add_option("--min-lr-ratio", o->min_lr_ratio, "the decay's floor, as a share of --lr")->capture_default_str()->check(in_range(0, 1));
  cmd->add_option("--temperature", o->temperature, "cosine similarities are divided by it")->capture_default_str()->check(above(0));
  cmd->add_option("--weight-decay", o->weight_decay, "AdamW weight decay")->capture_default_str()->check(at_least(0));
  cmd->add_option("--grad-clip", o->grad_clip, "global gradient-norm clip (0 = off)")->capture_default_str()->check(at_least(0));
  cmd->add_option("--pooling", o->pooling, "mean, last or weighted-mean (use the same with `slm embed`)")
      ->capture_default_str();
  cmd->add_option("--window", o->pairs.window, "at most this many tokens per side of a pair (default: the model's context)")->check(at_least(0));
  cmd->add_option("--anchor-min", o->pairs.anchor_min, "fewest tokens of a pair's first span")->capture_default_str()->check(at_least(1));
  cmd->add_option("--anchor-max", o->pairs.anchor_max, "most tokens of a pair's first span")->capture_default_str()->check(at_least(1));
  cmd->add_option("--positive-min", o->pairs.positive_min, "fewest tokens of the span that follows it")->check(at_least(1))
      ->capture_default_str();
  cmd->add_option("--val-fraction", o->val_fraction, "documents held out (as `slm embed eval --val-fraction`)")->check(in_range(0, 0.5))
      ->capture_default_str();
  cmd->add_option("--seed", o->pairs.seed, "seed of the held-out choice (as `slm embed eval --seed`) and of the pairs")
      ->capture_default_str();
  cmd->add_option("--save-every", o->save_every, "save the model every N steps (0 = at the end)")->capture_default_str()->check(at_least(0));
  cmd->add_option("--stop-at", o->stop_at, "stop (and save) after this step; continue later with --resume")->check(at_least(0));
  cmd->add_flag("--resume", o->resume, "continue the tuning saved in --out");
  cmd->add_option("--device", o->device, "auto, cpu or cuda")->capture_default_str();
  cmd->add_option("--precision", o->precision, "fp32 or bf16 (autocast; fp16 would need loss scaling)")
      ->capture_default_str()->check(CLI::IsMember({"fp32", "bf16"}));
  cmd->add_option("--threads", o->threads, "CPU threads per rank (0 = cores / ranks)")
      ->capture_default_str()
      ->check(in_range(0, kMaxThreads));
  cmd->add_option("--timeout", o->dist.timeout_s, "seconds before a silent peer counts as lost")->capture_default_str()->check(above(0));
  cmd->callback([o] {
    if (const int rc = embed::run_tune(*o); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace slm::cli
