// parallel/plan.cpp: see plan.h.
#include "parallel/plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <type_traits>
#include <toml++/toml.h>

#include "parallel/pipeline/schedule.h"
#include "util/error.h"
#include "util/toml_keys.h"
#include "util/files.h"

namespace slm::parallel {

int64_t Plan::global_batch() const {  // saturating: a plan file's sizes may multiply past int64
  int64_t sum = 0, out = 0;
  for (int64_t b : micro_batch)
    if (__builtin_add_overflow(sum, b, &sum)) return std::numeric_limits<int64_t>::max();
  return __builtin_mul_overflow(micro_batches, sum, &out) ? std::numeric_limits<int64_t>::max() : out;
}

static std::string resolve_schedule(const std::string& s, int64_t pp, int64_t v) {
  if (s != "auto") return s;
  return pp == 1 ? "none" : v > 1 ? "interleaved" : "1f1b";
}

Plan plan_from_flags(const PlanFlags& f, int64_t n_layer, int world, int64_t batch_size, int64_t micro_batch) {
  if (f.tp < 1 || f.pp < 1 || f.virtual_stages < 1 || f.micro_batches < 0 || f.dp == 0 || f.dp < -1)
    throw UserError(fmt::format("parallel: tp({}), pp({}), virtual_stages({}) must be >= 1, dp({}) -1 or >= 1, "
                                "micro_batches({}) >= 0",
                                f.tp, f.pp, f.virtual_stages, f.dp, f.micro_batches));
  const int64_t tp = f.tp, pp = f.pp, v = f.virtual_stages;
  if (world % (tp * pp) != 0)
    throw UserError(fmt::format("parallel: tp({})*pp({}) = {} does not divide the world size {}", tp, pp, tp * pp, world));
  const int64_t dp = f.dp == -1 ? world / (tp * pp) : f.dp;
  if (dp * tp * pp != world)
    throw UserError(fmt::format("parallel: dp({})*tp({})*pp({}) = {} != world size {}", dp, tp, pp, dp * tp * pp, world));
  if (pp * v > n_layer)
    throw UserError(fmt::format("parallel: pp({})*virtual_stages({}) = {} stages for {} layers", pp, v, pp * v, n_layer));
  Plan p;
  p.pp = static_cast<int>(pp), p.virtual_stages = static_cast<int>(v), p.dp = static_cast<int>(dp);
  p.zero = static_cast<int>(f.zero);
  p.schedule = resolve_schedule(f.schedule, pp, v);
  p.micro_batch.assign(static_cast<size_t>(dp), micro_batch);
  if (f.micro_batches > 0) {
    p.micro_batches = f.micro_batches;
  } else {
    if (batch_size % (micro_batch * dp) != 0)
      throw UserError(fmt::format("batch: batch_size {} must be a multiple of micro_batch {} x {} data-parallel "
                                  "replicas",
                                  batch_size, micro_batch, dp));
    p.micro_batches = batch_size / (micro_batch * dp);
  }
  const int64_t S = pp * v;
  int64_t layer = 0;
  for (int64_t k = 0; k < S; ++k) {
    StagePlan s;
    s.first = layer;
    layer += n_layer / S + (k < n_layer % S ? 1 : 0);
    s.end = layer;
    s.tp = static_cast<int>(tp);
    for (int64_t r = 0; r < dp * tp; ++r) s.ranks.push_back(static_cast<int>((k % pp) * dp * tp + r));
    p.stages.push_back(s);
  }
  return p;
}

namespace {

// The even presets an elastic restart may fall back to, nearest first (see fit_to_world).
std::vector<PlanFlags> even_presets(const PlanFlags& f, int64_t world, int64_t n_layer) {
  const int64_t tp = std::gcd(f.tp, world), rest = world / tp;
  std::vector<int64_t> pps;
  for (int64_t pp = std::min(f.pp, rest); pp >= 1; --pp)
    if (rest % pp == 0) pps.push_back(pp);
  for (int64_t pp = f.pp + 1; pp <= std::min(rest, n_layer); ++pp)
    if (rest % pp == 0) pps.push_back(pp);
  std::vector<PlanFlags> out;
  for (int64_t pp : pps) {
    PlanFlags g = f;
    g.tp = tp, g.pp = pp, g.dp = -1, g.micro_batches = 0;
    if (pp == 1 || pp * g.virtual_stages > n_layer) g.virtual_stages = 1;
    if (rest / pp == 1 && g.zero == 3) g.zero = 2;  // one replica: nothing to shard, only gathers to add
    if (g.pp != f.pp || g.virtual_stages != f.virtual_stages) g.schedule = "auto";
    out.push_back(g);
  }
  return out;
}

std::string degrees(const PlanFlags& f, int64_t world) {
  const int64_t dp = f.dp != -1 ? f.dp : world % (f.tp * f.pp) == 0 ? world / (f.tp * f.pp) : -1;
  return fmt::format("dp {} x tp {} x pp {}{}", dp == -1 ? std::string("auto") : std::to_string(dp), f.tp, f.pp,
                     f.zero > 0 ? fmt::format(", ZeRO {}", f.zero) : "");
}

}  // namespace

PlanFlags fit_to_world(const PlanFlags& f, int world, int64_t n_layer, const std::function<bool(const PlanFlags&)>& fits,
                       std::string* changed) {
  changed->clear();
  const int64_t w = world;
  if (f.tp < 1 || f.pp < 1) return f;  // plan_from_flags names the bad value
  const bool divides = w % (f.tp * f.pp) == 0 && (f.dp == -1 || f.dp * f.tp * f.pp == w);
  if (divides && fits(f)) return f;
  const std::vector<PlanFlags> presets = even_presets(f, w, n_layer);
  const PlanFlags* g = nullptr;
  for (const PlanFlags& p : presets)
    if (fits(p)) {
      g = &p;
      break;
    }
  if (!g && divides) return f;  // nothing fits the memory better: its check names the shortfall
  if (!g) g = &presets.front();
  *changed = fmt::format("{} does not fit {} ranks{}; going on with {} (the even preset{}, the same global batch)",
                         degrees(f, f.dp == -1 ? w : f.dp * f.tp * f.pp), w, divides ? " within the memory caps" : "",
                         degrees(*g, w), g != &presets.front() || divides ? " that fits the memory caps" : "");
  return *g;
}

namespace {

template <typename T>
T get(const toml::node* n, const std::string& key, const std::string& where) {
  if constexpr (std::is_integral_v<T>) {
    // Integers only from integer nodes: toml++ converts a float to an integer by a cast that is
    // undefined out of range (found by fuzz_toml); within a setting's range, so that none wraps.
    const std::optional<int64_t> v = n && n->is_integer() ? n->value<int64_t>() : std::nullopt;
    if (!v) throw UserError(fmt::format("{}: '{}' has the wrong type", where, key));
    if (*v < -int_setting_limit<T>() || *v > int_setting_limit<T>())
      throw UserError(fmt::format("{}: '{}' must be an integer between {} and {} (got {})", where, key,
                                  -int_setting_limit<T>(), int_setting_limit<T>(), *v));
    return static_cast<T>(*v);
  } else {
    auto v = n ? n->value<T>() : std::optional<T>{};
    if (!v) throw UserError(fmt::format("{}: '{}' has the wrong type", where, key));
    return *v;
  }
}

template <typename T>
std::vector<T> int_list(const toml::node* n, const std::string& key, const std::string& where) {
  const toml::array* a = n ? n->as_array() : nullptr;
  if (!a) throw UserError(fmt::format("{}: '{}' must be a list of integers", where, key));
  std::vector<T> out;
  for (const toml::node& e : *a) out.push_back(get<T>(&e, key, where));
  return out;
}


}  // namespace

Plan parse_plan(const std::string& text, const std::string& where) {
  toml::table t = parse_toml(text, where);
  // [set]: settings the layout needs besides the plan (planner/plan_file.h); train/config applies them.
  reject_unknown_keys(t, {"schedule", "micro_batches", "micro_batch", "zero", "virtual_stages", "job_ranks", "stage", "set"},
                     where);
  Plan p;
  p.zero = -1;
  if (auto* n = t.get("schedule")) p.schedule = get<std::string>(n, "schedule", where);
  if (auto* n = t.get("micro_batches")) p.micro_batches = get<int64_t>(n, "micro_batches", where);
  if (auto* n = t.get("zero")) p.zero = get<int>(n, "zero", where);
  if (auto* n = t.get("virtual_stages")) p.virtual_stages = get<int>(n, "virtual_stages", where);
  if (!t.get("micro_batch")) throw UserError(fmt::format("{}: 'micro_batch' (one size per replica) is missing", where));
  p.micro_batch = int_list<int64_t>(t.get("micro_batch"), "micro_batch", where);
  if (auto* n = t.get("job_ranks")) p.job_ranks = int_list<int>(n, "job_ranks", where);
  const toml::array* stages = t.get("stage") ? t.get("stage")->as_array() : nullptr;
  if (!stages || stages->empty()) throw UserError(fmt::format("{}: no [[stage]] tables", where));
  for (size_t k = 0; k < stages->size(); ++k) {
    const std::string w = fmt::format("{}: stage {}", where, k);
    const toml::table* st = (*stages)[k].as_table();
    if (!st) throw UserError(w + ": must be a table");
    reject_unknown_keys(*st, {"layers", "tp", "ranks"}, w);
    StagePlan s;
    std::vector<int64_t> layers = int_list<int64_t>(st->get("layers"), "layers", w);
    if (layers.size() != 2) throw UserError(w + ": 'layers' must be [first, end)");
    s.first = layers[0], s.end = layers[1];
    if (auto* n = st->get("tp")) s.tp = get<int>(n, "tp", w);
    s.ranks = int_list<int>(st->get("ranks"), "ranks", w);
    p.stages.push_back(s);
  }
  p.dp = static_cast<int>(p.micro_batch.size());
  p.pp = std::max<int>(1, static_cast<int>(p.stages.size()) / std::max(1, p.virtual_stages));
  return p;
}

Plan resolve_plan(const ParallelConfig& c, int64_t n_layer, int world, int64_t batch_size, int64_t micro_batch) {
  Plan p;
  if (c.plan.empty()) {
    p = plan_from_flags({c.dp, c.tp, c.pp, c.virtual_stages, c.micro_batches, c.schedule, c.zero}, n_layer, world,
                        batch_size, micro_batch);
  } else {
    if (c.plan == "auto")
      throw UserError("parallel.plan = \"auto\" is chosen when training starts (slm train) or by `slm plan auto`");
    if (!path_exists(c.plan)) throw UserError(fmt::format("parallel.plan: {}: no such file", c.plan));
    p = parse_plan(read_file(c.plan), c.plan);
    if (p.zero < 0) p.zero = static_cast<int>(c.zero);
  }
  if (p.global_batch() != batch_size)
    throw UserError(fmt::format("plan: micro_batches({}) x sum of micro_batch [{}] = {} sequences per step, but "
                                "batch.batch_size is {}",
                                p.micro_batches, fmt::join(p.micro_batch, ", "), p.global_batch(), batch_size));
  return p;
}

std::string plan_to_toml(const Plan& p) {
  std::string out = fmt::format(
      "# slm plan: {} pipeline rank set(s) x {} data-parallel replica(s)\n"
      "schedule = \"{}\"\nmicro_batches = {}\nmicro_batch = [{}]\nzero = {}\nvirtual_stages = {}\n",
      p.pp, p.dp, p.schedule, p.micro_batches, fmt::join(p.micro_batch, ", "), p.zero, p.virtual_stages);
  if (!p.job_ranks.empty())
    out += fmt::format("# the job's ranks it runs on (the others exit at start)\njob_ranks = [{}]\n",
                       fmt::join(p.job_ranks, ", "));
  for (const StagePlan& s : p.stages)
    out += fmt::format("\n[[stage]]\nlayers = [{}, {}]\ntp = {}\nranks = [{}]\n", s.first, s.end, s.tp,
                       fmt::join(s.ranks, ", "));
  return out;
}

void validate_plan(const Plan& p, const ModelShape& m, int job_world) {
  auto need = [](bool ok, const std::string& msg) {
    if (!ok) throw UserError("plan: " + msg);
  };
  const std::vector<int>& j = p.job_ranks;
  if (!j.empty()) {
    need(j[0] == 0 && std::is_sorted(j.begin(), j.end()) && std::adjacent_find(j.begin(), j.end()) == j.end(),
         fmt::format("job_ranks [{}] must ascend from 0 (rank 0 hosts the rendezvous)", fmt::join(j, ", ")));
    need(j.back() < job_world, fmt::format("job_ranks [{}] name rank {}, but the job has {} ranks (start {})",
                                           fmt::join(j, ", "), j.back(), job_world, j.back() + 1));
  }
  const int world = j.empty() ? job_world : static_cast<int>(j.size());
  need(!p.stages.empty(), "no stages");
  need(p.virtual_stages >= 1 && p.stages.size() % static_cast<size_t>(p.virtual_stages) == 0,
       fmt::format("{} stages is not a multiple of virtual_stages {}", p.stages.size(), p.virtual_stages));
  need(p.dp >= 1 && static_cast<int>(p.micro_batch.size()) == p.dp, "micro_batch needs one entry per replica");
  for (int64_t b : p.micro_batch) need(b >= 1, fmt::format("micro_batch {} must be >= 1", b));
  need(p.zero >= 0 && p.zero <= 3, fmt::format("zero {} is not 0, 1, 2 or 3", p.zero));
  pipeline::validate_schedule(p.schedule, p.pp, static_cast<int>(p.micro_batches), p.virtual_stages);
  int64_t layer = 0;
  std::vector<int> seen(static_cast<size_t>(world), -1);
  for (size_t k = 0; k < p.stages.size(); ++k) {
    const StagePlan& s = p.stages[k];
    need(s.first == layer && s.end > s.first,
         fmt::format("stage {} covers layers [{}, {}) but must start at layer {} and hold at least one", k, s.first,
                     s.end, layer));
    layer = s.end;
    need(s.tp >= 1 && m.n_head % s.tp == 0, fmt::format("stage {}: tp({}) must divide model.n_head({})", k, s.tp, m.n_head));
    need(m.vocab_padded % s.tp == 0,
         fmt::format("stage {}: tp({}) must divide the padded vocabulary {}", k, s.tp, m.vocab_padded));
    need(static_cast<int>(s.ranks.size()) == p.dp * s.tp,
         fmt::format("stage {} has {} ranks but dp({})*tp({}) = {}", k, s.ranks.size(), p.dp, s.tp, p.dp * s.tp));
    if (k >= static_cast<size_t>(p.pp)) {
      const StagePlan& same = p.stages[k % static_cast<size_t>(p.pp)];
      need(s.ranks == same.ranks && s.tp == same.tp,
           fmt::format("stage {} must run on the ranks and tp of stage {} (virtual stages)", k, k % p.pp));
      continue;
    }
    for (int r : s.ranks) {
      need(r >= 0 && r < world, fmt::format("stage {}: rank {} is outside 0..{}", k, r, world - 1));
      need(seen[static_cast<size_t>(r)] < 0, fmt::format("rank {} is in stage {} and stage {}", r, seen[static_cast<size_t>(r)], k));
      seen[static_cast<size_t>(r)] = static_cast<int>(k);
    }
  }
  need(layer == m.n_layer, fmt::format("the stages cover {} layers, the model has {}", layer, m.n_layer));
  for (int r = 0; r < world; ++r)
    need(seen[static_cast<size_t>(r)] >= 0, fmt::format("rank {} of {} is in no stage", r, world));
  need(p.stages.size() == 1 || p.stages.front().tp == p.stages.back().tp,
       fmt::format("first and last stage share the tied embedding and need the same tp ({} vs {})",
                   p.stages.front().tp, p.stages.back().tp));
}

RankRole role_of(const Plan& p, int rank) {
  RankRole role;
  for (int k = 0; k < p.pp; ++k) {
    const StagePlan& s = p.stages[static_cast<size_t>(k)];
    auto it = std::find(s.ranks.begin(), s.ranks.end(), rank);
    if (it == s.ranks.end()) continue;
    const int i = static_cast<int>(it - s.ranks.begin());
    role.pipe = k, role.replica = i / s.tp, role.tp_rank = i % s.tp;
    for (int c = 0; c < p.virtual_stages; ++c) role.stages.push_back(c * p.pp + k);
    return role;
  }
  throw UserError(fmt::format("plan: rank {} is in no stage", rank));
}

int rank_at(const Plan& p, int stage, int replica, int tp_rank) {
  const StagePlan& s = p.stages.at(static_cast<size_t>(stage));
  return s.ranks.at(static_cast<size_t>(replica * s.tp + tp_rank));
}

std::vector<int> replica_sites(const Plan& p, int64_t ranks_per_site) {
  std::vector<int> site(static_cast<size_t>(p.dp));
  std::map<int, int> per_site;
  for (int r = 0; r < p.dp; ++r) {
    site[static_cast<size_t>(r)] = static_cast<int>(rank_at(p, 0, r, 0) / ranks_per_site);
    for (size_t k = 0; k < p.stages.size(); ++k)
      for (int j = 0; j < p.stages[k].tp; ++j)
        if (rank_at(p, static_cast<int>(k), r, j) / ranks_per_site != site[static_cast<size_t>(r)])
          throw UserError(fmt::format("sync: diloco needs every model replica inside one site, but replica {} spans "
                                      "ranks of sites {} and {} (dist.ranks_per_site = {}); use a plan whose "
                                      "replicas lie in consecutive ranks",
                                      r, site[static_cast<size_t>(r)], rank_at(p, static_cast<int>(k), r, j) / ranks_per_site,
                                      ranks_per_site));
    ++per_site[site[static_cast<size_t>(r)]];
  }
  for (const auto& [s, n] : per_site)
    if (n != per_site.begin()->second)
      throw UserError(fmt::format("sync: diloco needs the same number of replicas in every site; site {} has {}, "
                                  "site {} has {}",
                                  per_site.begin()->first, per_site.begin()->second, s, n));
  return site;
}

Plan replica_major(Plan p) {
  for (size_t k = 0; k < p.stages.size(); ++k) {
    StagePlan& s = p.stages[k];
    const int pipe = static_cast<int>(k) % p.pp;
    for (int r = 0; r < p.dp; ++r)
      for (int j = 0; j < s.tp; ++j) s.ranks[static_cast<size_t>(r * s.tp + j)] = (r * p.pp + pipe) * s.tp + j;
  }
  return p;
}

int zero_shards(const Plan& p, int rank) {
  if (p.zero_ranks_per_site <= 0) return p.dp;
  const RankRole role = role_of(p, rank);
  std::map<int64_t, int> per_site;  // site -> replicas of this rank's dp group there
  for (int r = 0; r < p.dp; ++r) ++per_site[rank_at(p, role.pipe, r, role.tp_rank) / p.zero_ranks_per_site];
  for (const auto& [site, n] : per_site)
    if (n != per_site.begin()->second) return p.dp;
  return per_site.size() > 1 ? per_site.begin()->second : p.dp;
}

MemoryEstimate estimate_memory(const Plan& p, const ModelShape& m, int64_t seq_len, int rank) {
  const RankRole role = role_of(p, rank);
  const double C = static_cast<double>(m.n_embd), T = static_cast<double>(seq_len), H = static_cast<double>(m.n_head);
  const double V = static_cast<double>(m.vocab_padded), S = static_cast<double>(p.stages.size());
  const double b = static_cast<double>(p.micro_batch[static_cast<size_t>(role.replica)]);
  double trained = 0, head_copy = 0, layers = 0, logits = 0;
  int tp = 1;
  for (int k : role.stages) {
    const StagePlan& s = p.stages[static_cast<size_t>(k)];
    const double t = s.tp;
    tp = s.tp;
    const double L = static_cast<double>(s.end - s.first);
    layers += L;
    trained += L * (12 * C * C / t + 7 * C / t + 6 * C);
    if (k == 0) trained += V * C / t + static_cast<double>(m.block_size) * C;
    if (k == static_cast<int>(S) - 1) {
      trained += 2 * C;
      if (S > 1) head_copy = V * C / t;
      // tp > 1: the vocabulary-parallel loss keeps an fp32 copy of its logits (the softmax, then
      // in place its gradient) beside the logits or, in backward, the gradient cast back to them;
      // tp 1: the fused head (model/fused_head.h) holds one (b T, V) block in the compute dtype
      // while it runs and keeps the head's weight gradient until backward.
      logits = t > 1 ? b * T * V / t * (4 + m.activation_bytes) : b * T * V * m.activation_bytes + V * C * 4;
    }
  }
  MemoryEstimate e;
  const double dp = p.zero >= 1 ? zero_shards(p, rank) : 1;
  e.params = 4 * (trained + head_copy);
  e.grads = 4 * (p.zero >= 2 ? trained / dp : trained) + 4 * head_copy;
  e.optimizer = 8 * trained / dp;
  if (p.sync_ranks_per_site > 0) {  // DiLoCo: outer parameters, momentum and error for 1/L of the model
    int L = 0;
    for (int r = 0; r < p.dp; ++r)
      L += rank_at(p, role.pipe, r, role.tp_rank) / p.sync_ranks_per_site == rank / p.sync_ranks_per_site;
    e.optimizer += 12 * trained / std::max(1, L);
  }
  const int most = pipeline::max_in_flight(p.schedule, p.pp, role.pipe, static_cast<int>(p.micro_batches),
                                           p.virtual_stages);
  const double half = m.activation_bytes / 2.0;  // the formula counts 16-bit activations
  // Megatron's count per layer: 10 bytes per token and channel outside the linears' split (4 the
  // LayerNorms' inputs, 4 the column-parallel linears' inputs, 2 dropout masks), 24 / tp inside.
  // Sequence parallelism splits all 10 (the linears gather their inputs again in backward).
  const bool sp = m.sequence_parallel && tp > 1;
  const double outside = sp ? 10.0 / tp : 10.0;
  const double full_layer =
      half * b * T * C * (outside + 24.0 / tp + (m.attention_matrix ? 5 * H * T / (C * tp) : 0.0));
  const double per_layer = m.recompute ? b * T * C * 4 / (sp ? tp : 1) : full_layer;  // recomputed: its input
  e.activations = most * (per_layer * layers / p.virtual_stages + b * T * C * 4) + logits;
  if (p.zero == 3) {  // parallel/zero3.cpp: parameters sharded, gathered around their use
    const double block = 12 * C * C / tp + 7 * C / tp + 6 * C;  // one block's (tp slice's) parameters
    double kept = 0;  // embeddings (first stage) and final LayerNorm (last): gathered for the step
    for (int k : role.stages) kept += (k == 0 ? V * C / tp + static_cast<double>(m.block_size) * C : 0) +
                                      (k == static_cast<int>(S) - 1 ? 2 * C : 0);
    // Own shard + the kept units + a block in use and one prefetched (+ a last stage's tied head);
    // the kept units' gradients add up over the step, a block's is whole until its reduce-scatter.
    e.params = 4 * (trained / dp + kept + 2 * block + head_copy);
    e.grads = 4 * (trained / dp + kept + block + head_copy);
    // Blocks keep only their inputs (this rank's rows under sequence parallelism) and are recomputed
    // in backward, one at a time.
    e.activations = most * (b * T * C * 4 / (sp ? tp : 1) * (layers + 1) + full_layer) + logits;
  }
  return e;
}

// "2.87 GiB" or "5.1 MiB".
static std::string bytes_text(double bytes) {
  return bytes >= (1 << 30) ? fmt::format("{:.2f} GiB", bytes / (1 << 30)) : fmt::format("{:.1f} MiB", bytes / (1 << 20));
}

MemoryCap tighter(const MemoryCap& a, const MemoryCap& b) {
  if (a.gb <= 0) return b;
  if (b.gb <= 0) return a;
  return b.gb < a.gb ? b : a;
}

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The one line of a memory check that failed: who ("rank 1 needs", "ranks 0,1 of one machine need
// together") e plus in_use bytes, more than gb GiB (from).
[[noreturn]] void too_big(const std::string& who, const MemoryEstimate& e, double in_use, double gb, const std::string& from) {
  throw UserError(fmt::format("plan: {} ~{} (parameters {}, gradients {}, optimizer {}, activations {}){} > its {:.3g} GiB "
                              "({}); use more pipeline stages, tp or ZeRO, or smaller micro-batches (slm plan check "
                              "shows the estimate)",
                              who, bytes_text(e.total()), bytes_text(e.params), bytes_text(e.grads), bytes_text(e.optimizer),
                              bytes_text(e.activations),
                              in_use > 0 ? fmt::format(" + {} the runtime uses", bytes_text(in_use)) : "", gb, from));
}

}  // namespace

void check_memory_caps(const Plan& p, const ModelShape& m, int64_t seq_len, const std::vector<MemoryCap>& caps) {
  int world = 0;
  for (int k = 0; k < p.pp; ++k) world += static_cast<int>(p.stages[static_cast<size_t>(k)].ranks.size());
  struct Pool {
    std::vector<int> ranks;
    MemoryEstimate need;
    double in_use = 0;
  };
  std::map<int, Pool> pools;  // by machine_pool
  for (int r = 0; r < std::min(world, static_cast<int>(caps.size())); ++r) {
    const MemoryCap& cap = caps[static_cast<size_t>(r)];
    if (cap.gb <= 0 && cap.machine_pool < 0) continue;
    const MemoryEstimate e = estimate_memory(p, m, seq_len, r);
    if (cap.gb > 0 && e.total() + cap.in_use_gb * kGiB > cap.gb * kGiB)
      too_big(fmt::format("rank {} needs", r), e, cap.in_use_gb * kGiB, cap.gb, cap.from);
    if (cap.machine_pool < 0) continue;
    Pool& pool = pools[cap.machine_pool];
    pool.ranks.push_back(r), pool.in_use += cap.resident_gb * kGiB;
    pool.need.params += e.params, pool.need.grads += e.grads, pool.need.optimizer += e.optimizer;
    pool.need.activations += e.activations;
  }
  for (const auto& [id, pool] : pools) {
    const MemoryCap& cap = caps[static_cast<size_t>(pool.ranks.front())];
    if (cap.machine_gb <= 0 || pool.need.total() + pool.in_use <= cap.machine_gb * kGiB) continue;
    const std::string who = pool.ranks.size() == 1 ? fmt::format("rank {} needs", pool.ranks.front())
                                                   : fmt::format("ranks {} of one machine need together",
                                                                 fmt::join(pool.ranks, ","));
    too_big(who, pool.need, pool.in_use, cap.machine_gb, cap.machine_from);
  }
}

std::string describe_plan(const Plan& p, const ModelShape& m, int64_t seq_len) {
  std::ostringstream o;
  int world = 0;
  for (int k = 0; k < p.pp; ++k) world += static_cast<int>(p.stages[static_cast<size_t>(k)].ranks.size());
  o << fmt::format("plan: {} ranks = {} pipeline rank set(s) x {} replica(s); schedule {}, {} micro-batches per "
                   "replica of [{}] sequences (global batch {}), ZeRO {}{}\n",
                   world, p.pp, p.dp, p.schedule, p.micro_batches, fmt::join(p.micro_batch, ", "), p.global_batch(),
                   p.zero, p.zero > 0 && p.zero_ranks_per_site > 0 ? " (split inside each site)" : "");
  for (size_t k = 0; k < p.stages.size(); ++k) {
    const StagePlan& s = p.stages[k];
    std::string extra = k == 0 ? " + embeddings" : "";
    if (k + 1 == p.stages.size()) extra += " + head";
    std::vector<std::string> reps;
    for (int r = 0; r < p.dp; ++r) {
      std::vector<int> rs(s.ranks.begin() + r * s.tp, s.ranks.begin() + (r + 1) * s.tp);
      reps.push_back(fmt::format("[{}]", fmt::join(rs, ",")));
    }
    const std::string layers = s.end - s.first == 1 ? fmt::format("layer {}", s.first)
                                                    : fmt::format("layers {}-{}", s.first, s.end - 1);
    o << fmt::format("  stage {}: {}{}, tp {}, ranks per replica {}\n", k, layers, extra, s.tp, fmt::join(reps, " "));
  }
  o << fmt::format("  pipeline bubble (theory, equal stages): {:.1f}%\n",
                   100 * pipeline::theoretical_bubble(p.pp, static_cast<int>(p.micro_batches), p.virtual_stages));
  auto size = bytes_text;
  o << "  memory per rank (estimate: parameters + gradients + optimizer + activations):\n";
  for (int r = 0; r < world; ++r) {
    MemoryEstimate e = estimate_memory(p, m, seq_len, r);
    o << fmt::format("    rank {}: ~{} ({} + {} + {} + {})\n", r, size(e.total()), size(e.params), size(e.grads),
                     size(e.optimizer), size(e.activations));
  }
  return o.str();
}

}  // namespace slm::parallel
