// train/config.cpp: see config.h. One table lists every field once (section, key, pointer,
// help); parsing, overrides, unknown-key errors and the TOML dump all walk that table.
#include "train/config.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <optional>
#include <sstream>
#include <toml++/toml.h>
#include <variant>

#include "data/mix.h"
#include "model/attention_choice.h"
#include "util/error.h"
#include "util/files.h"
#include "util/threads.h"
#include "util/toml_keys.h"

namespace slm::train {
namespace {

using Ptr = std::variant<int64_t*, int*, uint64_t*, double*, std::string*, bool*>;
struct Field {
  const char* section;
  const char* key;
  Ptr ptr;
};

// The table: one row per key, in the order the TOML dump writes them (a list, not logic: it is as
// long as there are settings).
std::vector<Field> fields(Config& c) {
  return {
      {"run", "dir", &c.run.dir},
      {"init", "from", &c.init.from},
      {"model", "n_layer", &c.model.n_layer},
      {"model", "n_head", &c.model.n_head},
      {"model", "n_embd", &c.model.n_embd},
      {"model", "block_size", &c.model.block_size},
      {"model", "vocab_size", &c.model.vocab_size},
      {"model", "vocab_pad", &c.model.vocab_pad},
      {"model", "dropout", &c.model.dropout},
      {"model", "recompute", &c.model.recompute},
      {"data", "dir", &c.data.dir},
      {"data", "mix", &c.data.mix},
      {"data", "seed", &c.data.seed},
      {"batch", "batch_size", &c.batch.batch_size},
      {"batch", "micro_batch", &c.batch.micro_batch},
      {"batch", "seq_len", &c.batch.seq_len},
      {"optim", "name", &c.optim.name},
      {"optim", "lr", &c.optim.lr},
      {"optim", "beta1", &c.optim.beta1},
      {"optim", "beta2", &c.optim.beta2},
      {"optim", "eps", &c.optim.eps},
      {"optim", "weight_decay", &c.optim.weight_decay},
      {"optim", "grad_clip", &c.optim.grad_clip},
      {"schedule", "max_steps", &c.schedule.max_steps},
      {"schedule", "warmup_steps", &c.schedule.warmup_steps},
      {"schedule", "decay", &c.schedule.decay},
      {"schedule", "min_lr_ratio", &c.schedule.min_lr_ratio},
      {"schedule", "decay_ratio", &c.schedule.decay_ratio},
      {"system", "device", &c.system.device},
      {"system", "precision", &c.system.precision},
      {"system", "threads", &c.system.threads},
      {"system", "seed", &c.system.seed},
      {"system", "peak_tflops", &c.system.peak_tflops},
      {"system", "attention", &c.system.attention},
      {"system", "loss_scaling", &c.system.loss_scaling},
      {"system", "device_update", &c.system.device_update},
      {"system", "cuda_graphs", &c.system.cuda_graphs},
      {"system", "cuda_kernels", &c.system.cuda_kernels},
      {"system", "loss_scale_init", &c.system.loss_scale_init},
      {"system", "loss_scale_growth_interval", &c.system.loss_scale_growth_interval},
      {"eval", "every", &c.eval.every},
      {"eval", "batches", &c.eval.batches},
      {"log", "every", &c.log.every},
      {"log", "trace_steps", &c.log.trace_steps},
      {"log", "profile_steps", &c.log.profile_steps},
      {"log", "tensorboard", &c.log.tensorboard},
      {"checkpoint", "every", &c.checkpoint.every},
      {"checkpoint", "every_minutes", &c.checkpoint.every_minutes},
      {"checkpoint", "keep", &c.checkpoint.keep},
      {"checkpoint", "async", &c.checkpoint.async},
      {"cost", "price_per_hour", &c.cost.price_per_hour},
      {"parallel", "dp", &c.parallel.dp},
      {"parallel", "tp", &c.parallel.tp},
      {"parallel", "pp", &c.parallel.pp},
      {"parallel", "virtual_stages", &c.parallel.virtual_stages},
      {"parallel", "schedule", &c.parallel.schedule},
      {"parallel", "micro_batches", &c.parallel.micro_batches},
      {"parallel", "plan", &c.parallel.plan},
      {"parallel", "zero", &c.parallel.zero},
      {"parallel", "zero_scope", &c.parallel.zero_scope},
      {"parallel", "sequence_parallel", &c.parallel.sequence_parallel},
      {"parallel", "bucket_mb", &c.parallel.bucket_mb},
      {"parallel", "memory_cap_gb", &c.parallel.memory_cap_gb},
      {"dist", "backend", &c.dist.backend},
      {"dist", "interface", &c.dist.interface},
      {"dist", "timeout_s", &c.dist.timeout_s},
      {"dist", "join_timeout_s", &c.dist.join_timeout_s},
      {"dist", "secret_file", &c.dist.secret_file},
      {"dist", "ranks_per_site", &c.dist.wan.ranks_per_site},
      {"dist", "compress", &c.dist.wan.compress},
      {"dist", "channels", &c.dist.wan.channels},
      {"dist", "chunk_mb", &c.dist.wan.chunk_mb},
      {"dist", "topology", &c.dist.wan.topology},
      {"sync", "mode", &c.sync.mode},
      {"sync", "inner_steps", &c.sync.inner_steps},
      {"sync", "outer_lr", &c.sync.outer_lr},
      {"sync", "outer_momentum", &c.sync.outer_momentum},
      {"sync", "fragments", &c.sync.fragments},
      {"sync", "delay", &c.sync.delay},
      {"sync", "mix", &c.sync.mix},
      {"sync", "compress", &c.sync.compress},
      {"sync", "int8_chunk", &c.sync.int8_chunk},
      {"sync", "by", &c.sync.by},
      {"sync", "site_speeds", &c.sync.site_speeds},
      {"sync", "max_speedup", &c.sync.max_speedup},
      {"planner", "cluster", &c.planner.cluster},
      {"planner", "profile", &c.planner.profile},
      {"planner", "objective", &c.planner.objective},
      {"planner", "strategy", &c.planner.strategy},
      {"planner", "allow_lossy", &c.planner.allow_lossy},
      {"planner", "all_ranks", &c.planner.all_ranks},
  };
}

Field* find(std::vector<Field>& fs, const std::string& section, const std::string& key) {
  for (Field& f : fs)
    if (section == f.section && key == f.key) return &f;
  return nullptr;
}

void set_from_toml(const Field& f, const toml::node& n, const std::string& where) {
  auto bad = [&](const std::string& want) {
    return UserError(fmt::format("{}: [{}] {} must be {}", where, f.section, f.key, want));
  };
  std::visit(
      [&](auto* p) {
        using T = std::remove_pointer_t<decltype(p)>;
        if constexpr (std::is_same_v<T, std::string>) {
          if (!n.is_string()) throw bad("a string");
          *p = *n.value<std::string>();
        } else if constexpr (std::is_same_v<T, double>) {
          if (!n.is_number() || !std::isfinite(*n.value<double>())) throw bad("a finite number");
          *p = *n.value<double>();
        } else if constexpr (std::is_same_v<T, bool>) {
          if (!n.is_boolean()) throw bad("true or false");
          *p = *n.value<bool>();
        } else {
          if (!n.is_integer()) throw bad("an integer");
          const int64_t v = *n.value<int64_t>();
          if (std::is_unsigned_v<T> && v < 0) throw bad("a non-negative integer");
          const int64_t limit = int_setting_limit<T>();  // so that no count or size wraps
          if (!std::is_unsigned_v<T> && (v < -limit || v > limit))
            throw bad(fmt::format("an integer between {} and {} (got {})", -limit, limit, v));
          *p = static_cast<T>(v);
        }
      },
      f.ptr);
}

void apply_table(Config& c, const toml::table& root, const std::string& where) {
  std::vector<Field> fs = fields(c);
  for (const auto& [sec, node] : root) {
    const toml::table* t = node.as_table();
    if (!t) throw UserError(fmt::format("{}: \"{}\" is not a [section]", where, sec.str()));
    for (const auto& [key, val] : *t) {
      Field* f = find(fs, std::string(sec.str()), std::string(key.str()));
      if (!f) throw UserError(fmt::format("{}: unknown key [{}] {}", where, sec.str(), key.str()));
      set_from_toml(*f, val, where);
    }
  }
}

std::string value_text(const Ptr& p) {
  return std::visit(
      [](auto* v) -> std::string {
        using T = std::remove_pointer_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          std::ostringstream ss;
          ss << toml::value<std::string>(*v);
          return ss.str();
        } else if constexpr (std::is_same_v<T, bool>) {
          return *v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, double>) {
          std::string s = fmt::format("{}", *v);
          return s.find_first_of(".eEn") == std::string::npos ? s + ".0" : s;
        } else {
          return std::to_string(*v);
        }
      },
      p);
}

}  // namespace

Config parse_config_text(const std::string& text, const std::string& where) {
  Config c;
  try {
    apply_table(c, toml::parse(text, where), where);
  } catch (const toml::parse_error& e) {
    throw UserError(fmt::format("{}:{}: {}", where, e.source().begin.line, e.description()));
  }
  return c;
}

void apply_settings(Config& c, const std::vector<std::string>& overrides) {
  std::vector<Field> fs = fields(c);
  for (const std::string& o : overrides) {
    size_t dot = o.find('.'), eq = o.find('=');
    if (dot == std::string::npos || eq == std::string::npos || dot > eq)
      throw UserError(fmt::format("--set \"{}\": expected section.key=value", o));
    std::string sec = o.substr(0, dot), key = o.substr(dot + 1, eq - dot - 1), val = o.substr(eq + 1);
    if (val.find_first_of("\r\n") != std::string::npos)
      throw UserError(fmt::format("--set {}.{}: the value holds a line break; give one value on one line", sec, key));
    Field* f = find(fs, sec, key);
    if (!f) throw UserError(fmt::format("--set \"{}\": unknown key [{}] {}", o, sec, key));
    // Parse the value as TOML; a bare word that is not valid TOML is taken as a string.
    std::optional<toml::table> parsed;
    try {
      parsed = toml::parse("v = " + val);
    } catch (const toml::parse_error&) {
    }
    try {
      if (parsed && parsed->get("v")) set_from_toml(*f, *parsed->get("v"), "--set");
      else set_from_toml(*f, toml::value<std::string>(val), "--set");
    } catch (const UserError& e) {
      throw UserError(fmt::format("--set \"{}\": {}", o, std::string(e.what()).substr(7)));
    }
  }
}

namespace {

// The plan file's [set] table (planner/plan_file.h), if parallel.plan names a file that has one.
std::optional<toml::table> plan_settings(const Config& c) {
  if (c.parallel.plan.empty() || c.parallel.plan == "auto" || !path_exists(c.parallel.plan)) return std::nullopt;
  toml::table t;
  try {
    t = toml::parse(read_file(c.parallel.plan), c.parallel.plan);
  } catch (const toml::parse_error&) {
    return std::nullopt;  // parse_plan reports it with its line
  }
  const toml::table* s = t.get("set") ? t.get("set")->as_table() : nullptr;
  if (!s) return std::nullopt;
  return *s;
}

}  // namespace

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  Config c = path.empty() ? Config{} : parse_config_text(read_file(path), path);
  Config base = c;
  apply_settings(c, overrides);
  if (auto s = plan_settings(c)) {
    const std::string plan = c.parallel.plan;
    apply_table(base, *s, plan + ": [set]");
    base.parallel.plan = plan;
    apply_settings(base, overrides);
    return base;
  }
  return c;
}

void validate(const Config& c) {
  model::validate(c.model);
  parallel::validate(c.parallel);
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw UserError(msg);
  };
  need(c.parallel.zero_scope != "site" || c.dist.wan.ranks_per_site > 0,
       "parallel: zero_scope = \"site\" needs dist.ranks_per_site (how ranks are grouped into sites)");
  const auto& b = c.batch;
  need(b.batch_size >= 1, fmt::format("batch: batch_size {} must be >= 1", b.batch_size));
  need(b.micro_batch >= 1 && b.batch_size % b.micro_batch == 0,
       fmt::format("batch: micro_batch {} must divide batch_size {}", b.micro_batch, b.batch_size));
  need(b.seq_len >= 0 && b.seq_len <= c.model.block_size,
       fmt::format("batch: seq_len {} must be in [1, model.block_size = {}] (0 = block_size)",
                   b.seq_len, c.model.block_size));
  need(c.optim.lr > 0, fmt::format("optim: lr {} must be > 0", c.optim.lr));
  need(c.optim.name == "adamw" || c.optim.name == "sgd",
       fmt::format("optim: name \"{}\" is not one of adamw, sgd", c.optim.name));
  parallel::validate(c.sync);
  need(c.sync.mode != "diloco" || c.dist.wan.ranks_per_site > 0,
       "sync: mode = \"diloco\" needs dist.ranks_per_site (how ranks are grouped into sites)");
  need(c.sync.by == "steps" || c.sync.mode == "diloco",
       "sync: by = \"time\" needs mode = \"diloco\" (ordinary training keeps every rank in step)");
  need(c.sync.mode != "diloco" || c.model.n_layer % c.sync.fragments == 0,
       fmt::format("sync: fragments {} must divide model.n_layer {}", c.sync.fragments, c.model.n_layer));
  need(c.optim.grad_clip >= 0, "optim: grad_clip must be >= 0 (0 = off)");
  const auto& s = c.schedule;
  need(s.max_steps >= 1, fmt::format("schedule: max_steps {} must be >= 1", s.max_steps));
  need(s.warmup_steps >= 0, "schedule: warmup_steps must be >= 0");
  need(s.decay == "cosine" || s.decay == "linear" || s.decay == "sqrt" || s.decay == "constant",
       fmt::format("schedule: decay \"{}\" is not one of cosine, linear, sqrt, constant", s.decay));
  need(s.min_lr_ratio >= 0 && s.min_lr_ratio <= 1, "schedule: min_lr_ratio must be in [0, 1]");
  need(s.decay_ratio >= 0 && s.decay_ratio <= 1,
       fmt::format("schedule: decay_ratio {:g} must be in [0, 1] (0: decay from the end of warmup)", s.decay_ratio));
  need(s.decay_ratio == 0 || s.decay != "constant", "schedule: decay_ratio needs a decay: cosine, linear or sqrt");
  need(c.system.device == "auto" || c.system.device == "cpu" || c.system.device == "cuda",
       fmt::format("system: device \"{}\" is not one of auto, cpu, cuda", c.system.device));
  need(c.system.precision == "auto" || c.system.precision == "fp32" || c.system.precision == "bf16" ||
           c.system.precision == "fp16",
       fmt::format("system: precision \"{}\" is not one of auto, fp32, bf16, fp16", c.system.precision));
  need(c.system.device_update == "auto" || c.system.device_update == "on" || c.system.device_update == "off",
       fmt::format("system: device_update \"{}\" is not one of auto, on, off", c.system.device_update));
  need(c.system.cuda_kernels == "auto" || c.system.cuda_kernels == "off",
       fmt::format("system: cuda_kernels \"{}\" is not one of auto, off", c.system.cuda_kernels));
  need(c.system.cuda_graphs == "on" || c.system.cuda_graphs == "off" || c.system.cuda_graphs == "auto",
       fmt::format("system: cuda_graphs \"{}\" is not one of on, off, auto", c.system.cuda_graphs));
  need(c.system.loss_scaling == "auto" || c.system.loss_scaling == "on" || c.system.loss_scaling == "off",
       fmt::format("system: loss_scaling \"{}\" is not one of auto, on, off", c.system.loss_scaling));
  need(c.system.loss_scale_init >= 1 && c.system.loss_scale_growth_interval >= 1,
       "system: loss_scale_init must be >= 1 and loss_scale_growth_interval >= 1");
  need(c.system.threads >= 0 && c.system.threads <= kMaxThreads,
       fmt::format("system: threads {} must be from 0 (cores / ranks) to {}", c.system.threads, kMaxThreads));
  model::attention_candidates(c.system.attention);  // a one-line UserError for an unknown kernel
  need(c.eval.every >= 0 && c.eval.batches >= 1, "eval: every must be >= 0 and batches >= 1");
  need(c.log.every >= 1 && c.log.trace_steps >= 0 && c.log.profile_steps >= 0,
       "log: every must be >= 1, trace_steps and profile_steps >= 0");
  need(c.checkpoint.every >= 0 && c.checkpoint.keep >= 1 && c.checkpoint.every_minutes >= 0,
       "checkpoint: every and every_minutes must be >= 0 and keep >= 1");
  need(!c.data.dir.empty(), "data: dir is not set (a dataset from `slm data prepare`)");
  data::parse_mix(c.data.mix);  // a one-line UserError for a bad entry
  planner::validate(c.planner);
}

std::string to_toml(const Config& c) {
  Config copy = c;
  std::string out, section;
  for (const Field& f : fields(copy)) {
    if (section != f.section) {
      section = f.section;
      out += (out.empty() ? "[" : "\n[") + section + "]\n";
    }
    out += fmt::format("{} = {}\n", f.key, value_text(f.ptr));
  }
  return out;
}

}  // namespace slm::train
