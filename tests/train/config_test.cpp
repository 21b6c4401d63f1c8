// tests/train/config_test.cpp: TOML configuration: defaults, file + overrides, typed values,
// unknown keys rejected by name, the saved effective config reads back identically; LR schedule;
// the FLOPs of a step (one count with the planner); a planner candidate's settings reach a run the
// same way from a plan file's [set] table and from parallel.plan = "auto".
#include "train/config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "test_util.h"
#include "planner/cost_model.h"
#include "planner/plan_file.h"
#include "train/optim.h"
#include "train/trainer.h"
#include "util/error.h"

namespace slm::train {

static std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

TEST(Config, FileThenOverrides) {
  test::TempDir tmp;
  test::write(tmp / "c.toml", "[model]\nn_layer = 6\n[optim]\nlr = 1\n[schedule]\ndecay = 'linear'\n");
  Config c = load_config(tmp / "c.toml", {"model.n_layer=8", "data.dir=some/dir", "optim.beta2=0.99",
                                          "schedule.decay=constant"});
  EXPECT_EQ(c.model.n_layer, 8);
  EXPECT_EQ(c.model.n_embd, 256);  // default kept
  EXPECT_EQ(c.optim.lr, 1.0);      // an integer is accepted for a float
  EXPECT_EQ(c.optim.beta2, 0.99);
  EXPECT_EQ(c.data.dir, "some/dir");  // bare word taken as a string
  EXPECT_EQ(c.schedule.decay, "constant");
  Config back = parse_config_text(to_toml(c), "saved");
  EXPECT_EQ(to_toml(back), to_toml(c));
}

TEST(Config, ErrorsNameTheKey) {
  test::TempDir tmp;
  test::write(tmp / "bad.toml", "[model]\nn_layers = 6\n");
  EXPECT_EQ(error_of([&] { load_config(tmp / "bad.toml", {}); }),
            tmp / "bad.toml" + ": unknown key [model] n_layers");
  EXPECT_EQ(error_of([&] { load_config("", {"model.n_layer=six"}); }),
            "--set \"model.n_layer=six\": [model] n_layer must be an integer");
  EXPECT_EQ(error_of([&] { load_config("", {"nodot"}); }), "--set \"nodot\": expected section.key=value");
  test::write(tmp / "syntax.toml", "[model\n");
  EXPECT_NE(error_of([&] { load_config(tmp / "syntax.toml", {}); }).find("syntax.toml:1:"), std::string::npos);
  Config c = load_config("", {"data.dir=x", "model.vocab_size=100"});
  validate(c);
  c.batch.micro_batch = 5;
  EXPECT_EQ(error_of([&] { validate(c); }), "batch: micro_batch 5 must divide batch_size 32");
  c = load_config("", {"data.dir=x", "model.vocab_size=100", "system.precision=fp8"});
  EXPECT_NE(error_of([&] { validate(c); }).find("precision \"fp8\" is not one of auto, fp32, bf16, fp16"),
            std::string::npos);
  c = load_config("", {"data.dir=x", "model.vocab_size=100", "schedule.decay_ratio=1.5"});
  EXPECT_EQ(error_of([&] { validate(c); }),
            "schedule: decay_ratio 1.5 must be in [0, 1] (0: decay from the end of warmup)");
  c = load_config("", {"data.dir=x", "model.vocab_size=100", "schedule.decay_ratio=0.2", "schedule.decay=constant"});
  EXPECT_EQ(error_of([&] { validate(c); }), "schedule: decay_ratio needs a decay: cosine, linear or sqrt");
}

// Every integer setting has a range, so that no count or size wraps: a sum or small multiple of
// one (1 + log.trace_steps, 8 x parallel.micro_batches, vocab_size + vocab_pad) overflowed int64 and
// an `int` setting (system.threads) took the low 32 bits of what was given. The seeds take any
// non-negative int64. The keys are read from the dump, so a new integer setting is checked too.
TEST(Config, EveryIntegerSettingHasARange) {
  std::istringstream dump(to_toml(Config{}));
  std::string line, section;
  int checked = 0;
  while (std::getline(dump, line)) {
    if (line.size() > 2 && line.front() == '[') section = line.substr(1, line.size() - 2);
    const size_t eq = line.find(" = ");
    if (eq == std::string::npos || line.find_first_not_of("-0123456789", eq + 3) != std::string::npos) continue;
    const std::string key = section + "." + line.substr(0, eq);
    const std::string err = error_of([&] { load_config("", {key + "=9223372036854775807"}); });
    if (line.substr(0, eq) == "seed") {
      EXPECT_EQ(err, "") << key;
      continue;
    }
    EXPECT_NE(err.find("must be an integer between"), std::string::npos) << key << ": " << err;
    EXPECT_NE(err.find("(got 9223372036854775807)"), std::string::npos) << key << ": " << err;
    EXPECT_NE(error_of([&] { load_config("", {key + "=-9223372036854775808"}); }), "") << key;
    ++checked;
  }
  EXPECT_GE(checked, 30);
  EXPECT_EQ(error_of([&] { load_config("", {"log.trace_steps=1099511627777"}); }),
            "--set \"log.trace_steps=1099511627777\": [log] trace_steps must be an integer between -1099511627776 "
            "and 1099511627776 (got 1099511627777)");
  EXPECT_EQ(load_config("", {"log.trace_steps=1099511627776"}).log.trace_steps, int64_t{1} << 40);
  EXPECT_EQ(error_of([&] { load_config("", {"system.threads=4294967297"}); }),
            "--set \"system.threads=4294967297\": [system] threads must be an integer between -2147483647 and "
            "2147483647 (got 4294967297)");
  // A parallel degree counts ranks (ints): 2^40 was cast to tp 0, a division by zero.
  const Config tp = load_config("", {"data.dir=x", "model.vocab_size=100", "parallel.tp=1099511627776"});
  EXPECT_EQ(error_of([&] { validate(tp); }), "parallel: tp 1099511627776 must be from 1 to 2147483647");
  test::TempDir tmp;
  test::write(tmp / "c.toml", "[model]\nvocab_pad = 9223372036854775807\n");
  EXPECT_EQ(error_of([&] { load_config(tmp / "c.toml", {}); }),
            tmp / "c.toml" + ": [model] vocab_pad must be an integer between -1099511627776 and 1099511627776 (got "
                             "9223372036854775807)");
}

// The plan file's [set] table and apply_settings (what parallel.plan = "auto" calls) come from one
// list, candidate_settings: both give the same config, with every setting the candidate changes.
TEST(Config, CandidateSettingsFromThePlanFileEqualThoseApplied) {
  for (int64_t diloco : {0, 25}) {
    planner::Candidate c;
    parallel::PlanFlags f;
    f.dp = 2, f.zero = 1;
    c.plan = parallel::plan_from_flags(f, 4, 2, 8, 2);
    c.ranks = {0, 1};
    c.ranks_per_site = 1, c.compress = true, c.channels = 3, c.zero_site = true, c.recompute = true;
    c.diloco_steps = diloco;
    test::TempDir tmp;
    test::write(tmp / "plan.toml", planner::candidate_to_toml(c, 2, "a header"));
    const Config from_file = load_config("", {"parallel.plan=" + tmp / "plan.toml"});
    Config applied = load_config("", {});
    applied.parallel.plan = tmp / "plan.toml";
    std::vector<std::string> sets;
    for (const planner::Setting& s : planner::candidate_settings(c)) sets.push_back(s.section + "." + s.key + "=" + s.value);
    apply_settings(applied, sets);
    EXPECT_EQ(to_toml(applied), to_toml(from_file));
    EXPECT_EQ(applied.dist.wan.ranks_per_site, 1);
    EXPECT_TRUE(applied.dist.wan.compress);
    EXPECT_EQ(applied.dist.wan.channels, 3);
    EXPECT_EQ(applied.parallel.zero_scope, "site");
    EXPECT_TRUE(applied.model.recompute);
    EXPECT_EQ(applied.sync.mode, diloco > 0 ? "diloco" : "step");
    if (diloco > 0) {
      EXPECT_EQ(applied.sync.inner_steps, 25);
      EXPECT_EQ(applied.sync.compress, "int8");
    }
  }
}

TEST(Schedule, WarmupThenCosineOrLinearToFloor) {
  ScheduleConfig s;
  s.max_steps = 110, s.warmup_steps = 10, s.min_lr_ratio = 0.1;
  EXPECT_DOUBLE_EQ(lr_at(s, 1.0, 0), 0.1);
  EXPECT_DOUBLE_EQ(lr_at(s, 1.0, 9), 1.0);
  EXPECT_DOUBLE_EQ(lr_at(s, 1.0, 10), 1.0);
  EXPECT_NEAR(lr_at(s, 1.0, 60), 0.55, 1e-12);  // halfway: floor + (1 - floor) / 2
  EXPECT_NEAR(lr_at(s, 1.0, 110), 0.1, 1e-12);
  s.decay = "linear";
  EXPECT_NEAR(lr_at(s, 1.0, 35), 1.0 - 0.9 * 0.25, 1e-12);
  s.decay = "constant";
  EXPECT_DOUBLE_EQ(lr_at(s, 1.0, 100), 1.0);
}

TEST(Schedule, WarmupStableDecayHoldsThePeakUntilTheLastRatio) {
  ScheduleConfig s;
  s.max_steps = 110, s.warmup_steps = 10, s.min_lr_ratio = 0.1, s.decay_ratio = 0.2, s.decay = "linear";
  EXPECT_DOUBLE_EQ(lr_at(s, 1.0, 4), 0.5);   // warmup as before
  EXPECT_DOUBLE_EQ(lr_at(s, 1.0, 88), 1.0);  // stable: the decay is the last 22 steps, 88..110
  EXPECT_NEAR(lr_at(s, 1.0, 99), 0.55, 1e-12);
  EXPECT_NEAR(lr_at(s, 1.0, 110), 0.1, 1e-12);
  s.decay = "sqrt";  // 1 - sqrt(t)
  EXPECT_NEAR(lr_at(s, 1.0, 99), 0.1 + 0.9 * (1 - std::sqrt(0.5)), 1e-12);
  s.decay = "cosine";
  EXPECT_NEAR(lr_at(s, 1.0, 99), 0.55, 1e-12);
  EXPECT_LT(lr_at(s, 1.0, 90), 1.0);
  s.decay_ratio = 1;  // the whole run's decay cannot start inside warmup
  EXPECT_DOUBLE_EQ(lr_at(s, 1.0, 10), 1.0);
  EXPECT_NEAR(lr_at(s, 1.0, 60), 0.55, 1e-12);
  s.decay_ratio = 0, s.decay = "sqrt";  // from the end of warmup: a quarter of the way, half the drop
  EXPECT_NEAR(lr_at(s, 1.0, 35), 0.1 + 0.9 * 0.5, 1e-12);
}

}  // namespace slm::train

namespace slm::train {
namespace {

// One FLOPs count for training's MFU and the planner's TFLOP/s (they once differed: the real
// against the padded vocabulary): GPT-2 124M at 1024 tokens, the head over the padded 50,304.
TEST(Flops, TrainingCountsThePlannersFlops) {
  model::GPT2Config m;
  m.n_layer = 12, m.n_head = 12, m.n_embd = 768, m.block_size = 1024, m.vocab_size = 50257;
  const double want = 72.0 * 8 * 1024 * 768.0 * 768 * 12 * (1 + 1024 / (6.0 * 768)) + 6.0 * 8 * 1024 * 768 * 50304;
  EXPECT_DOUBLE_EQ(step_flops(m, 8, 1024), want);
  EXPECT_DOUBLE_EQ(step_flops(m, 8, 1024), planner::model_flops(model_shape(m), 8, 1024));
  m.recompute = true;  // one more block forward: 96 for 72
  EXPECT_DOUBLE_EQ(step_flops(m, 8, 1024), want + 24.0 * 8 * 1024 * 768.0 * 768 * 12 * (1 + 1024 / (6.0 * 768)));
}

}  // namespace
}  // namespace slm::train
