// embed/tune.cpp: see tune.h. Set-up, then the loop; tune_step is one optimizer step, read top
// to bottom: this rank's pairs -> pooled vectors -> all ranks' vectors -> InfoNCE -> backward ->
// gradients summed over the ranks -> clip -> AdamW.
#include "embed/tune.h"

#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "comm/collectives.h"
#include "data/prepare.h"
#include "embed/contrastive.h"
#include "embed/embed_model.h"
#include "embed/embedder.h"
#include "embed/pooling.h"
#include "host/device.h"
#include "host/runtime.h"
#include "model/autocast.h"
#include "model/hf_export.h"
#include "model/hf_import.h"
#include "parallel/batch_gather.h"
#include "tokenizer/encoder.h"
#include "tokenizer/hf_files.h"
#include "train/cadence.h"
#include "train/checkpoint.h"
#include "train/model_tokenizer.h"
#include "train/optim.h"
#include "train/run_log.h"
#include "util/error.h"
#include "util/files.h"
#include "util/interrupt.h"

namespace slm::embed {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void validate(const TuneOptions& o, const model::GPT2Config& c, int world) {
  const PairOptions& p = o.pairs;
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw UserError("embed tune: " + what);
  };
  need(!o.out.empty(), "give --out DIR (the tuned model and its metrics go there)");
  need(o.steps >= 1, fmt::format("--steps {} must be at least 1", o.steps));
  need(o.batch >= 2, fmt::format("--batch {} must be at least 2 (the other pairs are the negatives)", o.batch));
  need(o.batch % world == 0, fmt::format("--batch {} must be a multiple of the {} ranks", o.batch, world));
  need(o.lr > 0 && o.temperature > 0, "--lr and --temperature must be positive");
  need(o.warmup >= 0 && o.warmup < o.steps, fmt::format("--warmup {} must be in [0, --steps)", o.warmup));
  need(o.val_fraction >= 0 && o.val_fraction < 1, "--val-fraction must be in [0, 1)");
  need(p.window >= 2 && p.window <= c.block_size,
       fmt::format("--window {} must be in [2, the model's context {}]", p.window, c.block_size));
  need(p.anchor_min >= 1 && p.anchor_min <= p.anchor_max && p.anchor_min <= p.window - 1,
       fmt::format("--anchor-min {} must be at least 1 and at most --anchor-max {} and --window - 1 = {}",
                   p.anchor_min, p.anchor_max, p.window - 1));
  need(p.positive_min >= 1 && p.positive_min <= p.window - 1, "--positive-min must be in [1, --window - 1]");
}

// What defines the run; a resumed run must have the same (steps, saving and threads may change).
json run_identity(const TuneOptions& o, const std::string& source_identity) {
  return {{"source_identity", source_identity}, {"pooling", o.pooling}, {"batch", o.batch},
          {"lr", o.lr}, {"min_lr_ratio", o.min_lr_ratio}, {"warmup", o.warmup}, {"temperature", o.temperature},
          {"weight_decay", o.weight_decay}, {"grad_clip", o.grad_clip}, {"val_fraction", o.val_fraction},
          {"seed", o.pairs.seed}, {"anchor_tokens", {o.pairs.anchor_min, o.pairs.anchor_max}},
          {"positive_min", o.pairs.positive_min}, {"window", o.pairs.window}, {"precision", o.precision}};
}

// The documents of the training split (not held out), tokenized.
std::vector<std::vector<uint32_t>> training_docs(const TuneOptions& o, const train::ModelTokenizer& tok,
                                                 int64_t* held_out) {
  const data::Corpus corpus = data::load_corpus(o.inputs, o.corpus);
  const std::vector<bool> val =
      data::choose_val_docs(static_cast<int64_t>(corpus.docs.size()), o.val_fraction, o.pairs.seed);
  tokenizer::Encoder enc(tok.tok);
  std::vector<std::vector<uint32_t>> docs;
  *held_out = 0;
  for (size_t d = 0; d < corpus.docs.size(); ++d) {
    if (val[d]) {
      ++*held_out;
      continue;
    }
    docs.emplace_back();
    enc.encode(corpus.docs[d], docs.back());
  }
  return docs;
}

// One side of the pairs as a right-padded (n, T) batch and each row's length.
at::Tensor side(const std::vector<Pair>& pairs, bool anchors, std::vector<int64_t>& lengths) {
  std::vector<const std::vector<int64_t>*> rows;
  for (const Pair& p : pairs) rows.push_back(anchors ? &p.anchor : &p.positive);
  return padded_batch(rows, lengths);
}

struct Run {
  model::GPT2 model;
  std::vector<at::Tensor> params;
  std::unique_ptr<torch::optim::AdamW> opt;
  train::ModelTokenizer tok;
  std::vector<std::vector<uint32_t>> docs;
  std::vector<int64_t> eligible;
  Pooling pooling = Pooling::kMean;
  std::string device;
  int64_t step = 0;
};

struct StepStats {
  double loss = 0, accuracy = 0, grad_norm = 0, lr = 0;
  int64_t tokens = 0;  // this rank's
};

StepStats tune_step(Run& r, const TuneOptions& o, const comm::Group& world) {
  StepStats s;
  const int64_t per_rank = o.batch / world.size, first = world.rank * per_rank;
  const std::vector<Pair> pairs =
      step_pairs(r.docs, r.eligible, o.pairs, r.step, o.batch, first, first + per_rank, r.tok.eot_id);
  std::vector<int64_t> la, lp;
  const at::Tensor a_ids = side(pairs, true, la), p_ids = side(pairs, false, lp);
  s.tokens = a_ids.numel() + p_ids.numel();
  r.opt->zero_grad();
  at::Tensor a, p;
  {
    model::AutocastGuard autocast(o.precision, r.device);
    a = pool(final_hidden(r.model, a_ids.to(r.device)), la, r.pooling);
    p = pool(final_hidden(r.model, p_ids.to(r.device)), lp, r.pooling);
  }
  const ContrastiveLoss l = info_nce(parallel::gather_rows(a, world), parallel::gather_rows(p, world), o.temperature);
  l.loss.backward();
  parallel::sum_gradients(r.params, world);
  // The norm is logged even without clipping.
  const bool clips = train::clips_float_norm(o.grad_clip);
  s.grad_norm =
      torch::nn::utils::clip_grad_norm_(r.params, clips ? o.grad_clip : std::numeric_limits<double>::infinity());
  train::ScheduleConfig sched;
  sched.max_steps = o.steps, sched.warmup_steps = o.warmup, sched.min_lr_ratio = o.min_lr_ratio;
  s.lr = train::lr_at(sched, o.lr, r.step);
  for (auto& g : r.opt->param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(s.lr);
  r.opt->step();
  ++r.step;
  s.loss = l.loss.item<double>(), s.accuracy = l.accuracy;
  return s;
}

// Rank 0: out/model replaced atomically by the model (Hugging Face files), the optimizer state
// and the step.
void save(const Run& r, const TuneOptions& o) {
  AtomicDir dir(o.out + "/model", /*overwrite=*/true);
  model::write_hf_files(r.model, o.out + "/tokenizer", r.tok.eot_id, dir.dir());
  torch::save(*r.opt, dir.dir() + "/optimizer.pt");
  write_file_atomic(dir.dir() + "/tune_state.json", json{{"step", r.step}}.dump() + "\n");
  dir.commit();
}

// Whether out holds a tuning to resume (out/model/tune_state.json): only with --resume, and only
// from the same model with the same options (options.json).
bool saved_tuning(const TuneOptions& o, const json& identity) {
  if (!path_exists(o.out + "/model/tune_state.json")) return false;
  if (!o.resume)
    throw UserError(fmt::format("{}: holds a tuned model; pass --resume to continue it, or choose another --out", o.out));
  const json before = json::parse(read_file(o.out + "/options.json"), nullptr, false);
  if (before != identity)
    throw UserError(fmt::format("{}: was tuned from another model or with other options; --resume needs the same "
                                "(see {}/options.json)", o.out, o.out));
  return true;
}

// The parameters to tune on the run's device and AdamW over them; resumed: the saved model, the
// optimizer's state and the step from out/model.
void set_up_optimizer(Run& r, const TuneOptions& o, bool saved) {
  const std::string model_dir = o.out + "/model";
  if (saved) model::copy_parameters(model::load_hf(model_dir, r.model.cfg.vocab_pad), r.model);
  for (auto& [name, p] : model::named_parameters(r.model)) {
    p.requires_grad_(true);
    if (r.device != "cpu") p.set_data(p.data().to(r.device));
    r.params.push_back(p);
  }
  r.opt = std::make_unique<torch::optim::AdamW>(
      r.params, torch::optim::AdamWOptions(o.lr).betas({0.9, 0.999}).weight_decay(o.weight_decay));
  if (!saved) return;
  try {
    torch::load(*r.opt, model_dir + "/optimizer.pt", torch::Device(r.device));
    r.step = json::parse(read_file(model_dir + "/tune_state.json")).at("step").get<int64_t>();
  } catch (const UserError&) {
    throw;
  } catch (const std::exception&) {
    throw UserError(fmt::format("{}: optimizer.pt or tune_state.json is unreadable (damaged?); start again in "
                                "another --out", model_dir));
  }
}

// The training documents and those long enough for a pair (at least a batch of them); *held_out:
// the documents left for `slm embed eval`.
void open_documents(Run& r, const TuneOptions& o, int64_t* held_out) {
  r.docs = training_docs(o, r.tok, held_out);
  r.eligible = eligible_docs(r.docs, o.pairs);
  if (static_cast<int64_t>(r.eligible.size()) < o.batch)
    throw UserError(fmt::format("embed tune: {} of the {} training documents have the {} tokens a pair needs; a batch "
                                "of {} needs that many: lower --batch, or give more (or longer) documents",
                                r.eligible.size(), r.docs.size(), o.pairs.anchor_min + o.pairs.positive_min, o.batch));
}

void announce(const Run& r, const TuneOptions& o, int64_t held_out, int ranks) {
  std::fprintf(stderr,
               "embed tune: %lld parameters, %s pooling, %lld training documents (%zu long enough for a pair; "
               "%lld held out as `slm embed eval --val-fraction %g --seed %llu` holds out), batch %lld pairs on %d "
               "rank(s), %s %s, steps %lld..%lld -> %s\n",
               static_cast<long long>(model::num_parameters(r.model)), o.pooling.c_str(),
               static_cast<long long>(r.docs.size()), r.eligible.size(), static_cast<long long>(held_out),
               o.val_fraction, static_cast<unsigned long long>(o.pairs.seed), static_cast<long long>(o.batch), ranks,
               r.device.c_str(), o.precision.c_str(), static_cast<long long>(r.step), static_cast<long long>(o.steps),
               o.out.c_str());
}

// Steps up to --stop-at (or --steps), each logged; rank 0 saves every --save-every steps, at the
// end, when a signal stops the job (every rank agrees on it after the step) and, alone, when a
// peer is lost. The exit code.
int tune_loop(Run& r, const TuneOptions& o, const comm::Group& world, train::RunLog& log) {
  const bool main_rank = world.rank == 0;
  const int64_t end = o.stop_at > 0 ? std::min(o.stop_at, o.steps) : o.steps;
  while (r.step < end) {
    const auto t0 = std::chrono::steady_clock::now();
    StepStats s;
    double tokens = 0;
    bool stop = false;
    try {
      s = tune_step(r, o, world);
      const std::vector<double> agreed = comm::sum({static_cast<double>(s.tokens), interrupted() ? 1.0 : 0.0}, world);
      tokens = agreed[0], stop = agreed[1] > 0;
    } catch (const comm::PeerLost&) {
      // Every rank holds the whole model, and r.step counts only finished updates: rank 0 keeps them.
      if (main_rank) {
        save(r, o);
        log.say(fmt::format("saved {}/model at step {} (rank 0 alone, after losing a peer)", o.out, r.step));
      }
      throw;
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    log.write({{"step", r.step}, {"loss", s.loss}, {"accuracy", s.accuracy}, {"lr", s.lr}, {"grad_norm", s.grad_norm},
               {"step_s", secs}, {"pairs_per_s", o.batch / secs}, {"tokens_per_s", tokens / secs}});
    log.progress(fmt::format("tune step {}/{} | loss {:.4f} | in-batch accuracy {:.3f} | lr {:.2e} | {:.1f} pairs/s "
                             "| {:.0f} tok/s", r.step, o.steps, s.loss, s.accuracy, s.lr, o.batch / secs, tokens / secs),
                 r.step == 1 || r.step % 10 == 0 || r.step == end);
    const train::Due due = train::due_after(r.step, end, o.steps, 0, o.save_every);
    if ((due.save || stop) && main_rank) {
      save(r, o);
      log.say(fmt::format("saved {}/model at step {}", o.out, r.step));
    }
    if (stop && !due.last) {
      log.say(fmt::format("stopped by signal at step {}; continue with --resume", r.step));
      return train::stopped_exit_code();
    }
  }
  return 0;
}

}  // namespace

int run_tune(const TuneOptions& options) {
  TuneOptions o = options;
  comm::DistConfig dist = o.dist;
  Run r;
  r.device = host::resolve_device(o.device, dist.backend);
  comm::World w = comm::init_world(dist, r.device);
  const comm::Group& world = w.world;
  const bool main_rank = world.rank == 0;
  host::configure_cpu_threads(o.threads, w.env.local_world);
  r.pooling = parse_pooling(o.pooling);

  train::Config cfg;
  o.source = model_path(o.source);  // another tuning's folder: its model
  r.model = train::load_model(o.source, &cfg);
  r.tok = train::model_tokenizer(o.source, cfg, "");
  if (o.pairs.window == 0) o.pairs.window = r.model.cfg.block_size;
  validate(o, r.model.cfg, world.size);
  const json identity = run_identity(o, model_identity(r.model));
  comm::require_same(identity.dump() + fmt::format(" resume={} steps={}", o.resume, o.steps), world, "embed tune options");
  const bool saved = saved_tuning(o, identity);
  set_up_optimizer(r, o, saved);
  int64_t held_out = 0;
  open_documents(r, o, &held_out);
  if (main_rank) {
    fs::create_directories(o.out);
    if (!saved) {
      tokenizer::save_tokenizer(r.tok.tok, o.out + "/tokenizer", /*overwrite=*/true);
      write_file_atomic(o.out + "/options.json", identity.dump(2) + "\n");
    }
  }
  train::RunLog log(main_rank, o.out + "/metrics.jsonl");
  if (main_rank) announce(r, o, held_out, world.size);
  const int code = tune_loop(r, o, world, log);
  if (code == 0 && main_rank && r.step == o.steps)
    std::fprintf(stderr, "embed tune: done; embed with `slm embed %s ...`, measure with `slm embed eval %s ...`\n",
                 o.out.c_str(), o.out.c_str());
  return code;
}

}  // namespace slm::embed
