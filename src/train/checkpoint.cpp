// train/checkpoint.cpp: see checkpoint.h.
#include "train/checkpoint.h"

#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>
#include <nlohmann/json.hpp>

#include "comm/collectives.h"
#include "host/rng_state.h"
#include "model/hf_import.h"
#include "parallel/tensor/model.h"
#include "parallel/tensor/random.h"
#include "train/archive_file.h"
#include "train/checkpoint_state.h"
#include "util/error.h"
#include "util/files.h"
#include "util/hash.h"

namespace slm::train {
namespace fs = std::filesystem;
using json = nlohmann::json;

static std::vector<std::string> checkpoint_dirs(const std::string& run_dir) {  // newest first
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_dir + "/checkpoints", ec)) {
    std::string name = e.path().filename().string();
    if (e.is_directory() && name.rfind("step_", 0) == 0 && name.find('.') == std::string::npos)
      out.push_back(e.path().string());
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

static std::string shard_file(int i) { return fmt::format("shard_{:05d}.pt", i); }

// DiLoCo: each site's model and inner optimizer state; site 0's files carry no prefix, so a
// checkpoint of ordinary training and site 0 of a DiLoCo one read alike.
static std::string site_prefix(int site) { return site > 0 ? fmt::format("site{}_", site) : std::string(); }
static int site_of(const Trainer& t) { return t.outer ? parallel::site_index(*t.outer) : 0; }
// Whether `file` holds site `site`'s model: its prefixed files where the checkpoint has them, else
// the unprefixed ones (outer state files are never model files).
static bool model_file_of(const std::string& file, int site, int saved_sites) {
  if (file.rfind("outer_", 0) == 0) return false;
  if (site > 0 && site < saved_sites) return file.rfind(site_prefix(site), 0) == 0;
  return file.rfind("site", 0) != 0;
}
// This rank's outer state (θ_outer piece, momentum, error feedback, syncs in flight).
static std::string outer_file(const Trainer& t, const std::string& piece) {
  return fmt::format("outer_site{}_{}{}", site_of(t), piece, shard_file(t.groups.dp.rank));
}

// With pipeline stages / tensor parallelism each stage and tp rank writes its own files
// ("pp<stage>_tp<r>_" prefixes).
static std::string piece_prefix(const Trainer& t) {
  std::string p = t.pipe->plan.stages.size() > 1 ? fmt::format("pp{}_", t.pipe->role.pipe) : std::string();
  return p + (t.groups.tp.size > 1 ? fmt::format("tp{}_", t.groups.tp.rank) : std::string());
}

// Where this rank's buffer (param_shard, the AdamW moments) sits in the *whole model's* flat
// vector: the ZeRO segments (buffer -> this rank's flat vector) composed with the pipeline stage
// (this rank's parameters by name) and the tensor-parallel slices (this rank's parameters -> whole
// parameters). For saving, parameters every tp rank holds are written by tp rank 0 only, so the
// files cover the whole model exactly once.
static std::vector<parallel::Segment> model_segments(const Trainer& t, bool for_save) {
  if (t.groups.tp.size == 1 && t.pipe->plan.stages.size() == 1) return parallel::segments(*t.dp);
  const parallel::FlatLayout& local = parallel::layout(*t.dp);
  const parallel::FlatLayout& whole = t.model_layout;
  std::vector<parallel::Segment> out;
  for (const parallel::Segment& s : parallel::segments(*t.dp))
    for (size_t i = 0; i < local.names.size(); ++i) {
      const bool replicated = parallel::tensor::replicated_over_tp(local.names[i]);
      if (for_save && replicated && t.groups.tp.rank > 0) continue;
      const size_t w = static_cast<size_t>(std::find(whole.names.begin(), whole.names.end(), local.names[i]) -
                                           whole.names.begin());
      std::vector<parallel::Segment> pieces =
          parallel::tensor::tp_pieces(local.names[i], t.cfg.model, t.groups.tp.rank, t.groups.tp.size);
      if (pieces.empty()) pieces.push_back({0, 0, local.numels[i]});
      for (const parallel::Segment& p : pieces) {
        const int64_t begin = local.offsets[i] + p.local;  // in this rank's flat vector
        const int64_t lo = std::max(s.global, begin), hi = std::min(s.global + s.size, begin + p.size);
        if (lo < hi) out.push_back({s.local + lo - s.global, whole.offsets[w] + p.global + lo - begin, hi - lo});
      }
    }
  return out;
}

// "<run_dir>'s disk has X free; a checkpoint needs about Y" for a failed save.
static std::string disk_note(const Trainer& t, const std::string& run_dir) {
  std::error_code ec;
  const fs::space_info sp = fs::space(run_dir, ec);
  const int sites = t.outer ? parallel::num_sites(*t.outer) : 1;
  const double need = static_cast<double>(t.num_params) * 12.0 * sites;  // params + two Adam moments, fp32
  return ec ? fmt::format("a checkpoint needs about {:.1f} MB", need / 1e6)
            : fmt::format("{} has {:.1f} MB free; a checkpoint needs about {:.1f} MB", run_dir,
                          static_cast<double>(sp.available) / 1e6, need / 1e6);
}

// One line for a save that failed, with the partial folder removed (by the leader).
UserError save_failed(const CheckpointSnapshot& c, const std::string& failure) {
  std::error_code ec;
  if (c.leader) fs::remove_all(c.partial, ec);
  return UserError(fmt::format("checkpoint {} not written: {} ({}); the previous checkpoints are kept", c.path,
                               failure.empty() ? "another rank could not write its part" : failure, c.disk_note));
}

// A write that fails on any rank (a full disk, a quota, an I/O error) fails the save on every rank
// in one line, with the partial folder removed and the previous checkpoints kept.
static void check_written(const CheckpointSnapshot& c, const std::string& failure, const comm::Group& world) {
  std::vector<double> failed{failure.empty() ? 0.0 : 1.0};
  if (!c.solo) failed = comm::sum(failed, world);
  if (failed[0] != 0) throw save_failed(c, failure);
}

static std::string attempt(const std::function<void()>& write) {  // what went wrong, or ""
  try {
    write();
  } catch (const std::exception& e) {  // UserError from our writers, filesystem_error
    return e.what();
  }
  return "";
}

// x on the CPU for saving. A view would be saved with its whole storage: copy only those (a whole
// CPU tensor is written as it is, so a synchronous save does not double the optimizer state in
// memory). An asynchronous save (`copy`) copies everything: training goes on changing the originals.
static at::Tensor cpu_for_save(const at::Tensor& x, bool copy) {
  at::Tensor c = x.detach().cpu();
  if (c.data_ptr() != x.data_ptr()) return c;  // copied off the GPU already
  const bool whole = c.is_contiguous() && c.storage_offset() == 0 &&
                     c.storage().nbytes() == static_cast<size_t>(c.numel()) * c.element_size();
  return whole && !copy ? c : c.clone();
}

// The generators a checkpoint keeps (dropout's masks), by name: the CPU's, and on a CUDA run the
// GPU's (its Philox seed and offset), so that a resumed run draws the masks the straight one drew.
static std::vector<std::pair<std::string, c10::Device>> rng_devices(const Trainer& t) {
  std::vector<std::pair<std::string, c10::Device>> out{{"cpu", c10::Device(c10::kCPU)}};
  if (t.device == "cuda") out.emplace_back("cuda", c10::Device(c10::kCUDA));  // the current GPU
  return out;
}

// This rank's buffer (parameters, AdamW's moments), where its pieces sit and the generators.
static std::shared_ptr<torch::serialize::OutputArchive> shard_archive(const Trainer& t, bool copy) {
  std::vector<int64_t> flat;  // (k, 3): local, global, size
  for (const parallel::Segment& g : model_segments(t, /*for_save=*/true)) flat.insert(flat.end(), {g.local, g.global, g.size});
  auto a = std::make_shared<torch::serialize::OutputArchive>();
  a->write("param", cpu_for_save(parallel::param_shard(*t.dp), copy));
  a->write("exp_avg", cpu_for_save(t.adam.exp_avg, copy));
  a->write("exp_avg_sq", cpu_for_save(t.adam.exp_avg_sq, copy));
  a->write("segments", at::tensor(flat, at::kLong).view({-1, 3}));
  for (const auto& [name, device] : rng_devices(t)) {
    a->write("rng." + name, host::generator_state(device));
    a->write("rng.tp_split." + name, parallel::tensor::split_rng_state(device));  // dropout on a tp rank's own part
  }
  return a;
}

// DiLoCo's outer pieces of this rank (syncs in flight are received first).
static std::shared_ptr<torch::serialize::OutputArchive> outer_archive(const Trainer& t, bool copy) {
  const parallel::OuterState o = parallel::settle_outer_state(*t.outer);
  std::vector<int64_t> pending;
  for (const auto& [f, step] : o.pending) pending.insert(pending.end(), {f, step});
  auto a = std::make_shared<torch::serialize::OutputArchive>();
  a->write("theta", cpu_for_save(o.theta, copy));
  a->write("momentum", cpu_for_save(o.momentum, copy));
  a->write("error", cpu_for_save(o.error, copy));
  a->write("pending", at::tensor(pending, at::kLong).view({-1, 2}));
  a->write("adam_step", at::tensor(std::vector<int64_t>{t.adam.step}, at::kLong));  // the site's own (sync.by = "time")
  return a;
}

// state.json: the step, the optimizer's and loss scale's counters, the loader's position, the
// model's layout, who saved it how, the tokenizer, the configuration.
static json checkpoint_state(const Trainer& t, bool solo) {
  const parallel::FlatLayout& l = t.model_layout;
  const data::LoaderState ls = train_position(t);
  json state = {
      {"format", 2},
      {"step", t.step},
      {"adam_step", t.adam.step},
      {"loss_scale", {{"scale", t.scaler.scale}, {"good_steps", t.scaler.good_steps}}},
      {"loader", {{"epoch", ls.epoch}, {"cursor", ls.cursor}}},
      {"layout", {{"names", l.names}, {"shapes", l.shapes}}},
      {"saved_by",
       {{"world", solo ? 1 : t.groups.world.size}, {"zero", parallel::zero_stage(*t.dp)}, {"tp", t.groups.tp.size},
        {"pp", t.pipe->plan.pp}, {"sites", t.outer && !solo ? parallel::num_sites(*t.outer) : 1},
        {"layout", describe_layout(t)}}},
      {"tokenizer_identity", t.data.manifest.tokenizer_identity},
      {"config", to_toml(t.cfg)},
      {"cwd", fs::current_path().string()}};  // what the config's relative paths start from
  if (!t.round_steps.empty()) state["sync_round_steps"] = t.round_steps;  // sync.by = "time"
  return state;
}

CheckpointSnapshot snapshot_checkpoint(const Trainer& t, const std::string& run_dir, int64_t keep, bool solo,
                                       bool copy) {
  const bool sharded = parallel::zero_stage(*t.dp) > 0 && !solo;
  const comm::Group& world = t.groups.world;
  CheckpointSnapshot c;
  c.step = t.step;
  c.keep = keep;
  c.solo = solo;
  c.leader = solo || world.rank == 0;
  c.run_dir = run_dir;
  c.path = fmt::format("{}/checkpoints/step_{:08d}", run_dir, t.step);
  c.partial = c.path + ".partial";
  c.disk_note = disk_note(t, run_dir);
  std::string failure;
  if (c.leader)
    failure = attempt([&] {
      fs::create_directories(run_dir + "/checkpoints");
      fs::remove_all(c.partial);
      fs::create_directories(c.partial);
    });
  check_written(c, failure, world);
  // Shards are written by the first dp replica of each (that is site 0 with hybrid sharding: the
  // other sites hold the same shards); unsharded by dp rank 0.
  const comm::Group& zg = parallel::zero_group(*t.dp);
  if (solo || (sharded ? t.groups.dp.rank < zg.size : t.groups.dp.rank == 0))
    c.archives.push_back({site_prefix(site_of(t)) + piece_prefix(t) + shard_file(sharded ? zg.rank : 0),
                          shard_archive(t, copy)});
  if (t.outer && !solo)  // every rank
    c.archives.push_back({outer_file(t, piece_prefix(t)), outer_archive(t, copy)});
  if (c.leader) c.state = checkpoint_state(t, solo);
  return c;
}

std::string write_snapshot(CheckpointSnapshot& c) {
  for (auto& [file, archive] : c.archives) {
    const std::string failure = attempt([&] { save_archive(*archive, c.partial + "/" + file); });
    if (!failure.empty()) return failure;
  }
  c.archives.clear();  // the host copies are not needed any more
  return "";
}

std::string finish_checkpoint(CheckpointSnapshot& c) {
  if (!c.leader) return "";
  return attempt([&] {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(c.partial)) files.push_back(e.path().filename().string());
    std::sort(files.begin(), files.end());
    json shards = json::array();
    for (const std::string& f : files) shards.push_back({{"file", f}, {"checksum", hash_file_hex(c.partial + "/" + f)}});
    c.state["shards"] = shards;
    c.state["checksum"] = state_checksum(c.state);
    write_file_atomic(c.partial + "/state.json", c.state.dump(1) + "\n");
    fs::remove_all(c.path);
    fs::rename(c.partial, c.path);
    std::vector<std::string> all = checkpoint_dirs(c.run_dir);
    for (size_t i = static_cast<size_t>(c.keep); i < all.size(); ++i) fs::remove_all(all[i]);
    for (const auto& e : fs::directory_iterator(c.run_dir + "/checkpoints"))  // left by a killed run
      if (e.path().extension() == ".partial") fs::remove_all(e.path());
  });
}

std::string save_checkpoint(const Trainer& t, const std::string& run_dir, int64_t keep, bool solo) {
  CheckpointSnapshot c = snapshot_checkpoint(t, run_dir, keep, solo, /*copy=*/false);
  check_written(c, write_snapshot(c), t.groups.world);
  check_written(c, finish_checkpoint(c), t.groups.world);
  if (!solo) comm::barrier(t.groups.world);
  return c.path;
}

// Parses state.json and verifies the checksums; UserError describing the first problem.
static json read_state(const std::string& dir) {
  json state;
  try {
    state = json::parse(read_file(dir + "/state.json"));
    if (state.value("format", 1) != 2)
      throw UserError(fmt::format("{}: written by an older slm (checkpoint format 1)", dir));
    for (const json& s : state.at("shards"))
      if (hash_file_hex(dir + "/" + s.at("file").get<std::string>()) != s.at("checksum").get<std::string>())
        throw UserError(fmt::format("{}/{}: checksum mismatch", dir, s.at("file").get<std::string>()));
    check_state(state, dir);
  } catch (const json::exception& e) {
    throw UserError(fmt::format("{}/state.json: malformed ({})", dir, e.what()));
  }
  return state;
}

std::optional<std::string> find_latest_checkpoint(const std::string& run_dir,
                                                  const std::function<void(const std::string&)>& warn) {
  std::vector<std::string> corrupt;  // "dir is corrupt (why)", newest first
  for (const std::string& dir : checkpoint_dirs(run_dir)) {
    try {
      read_state(dir);
      for (const std::string& c : corrupt) warn(fmt::format("checkpoint {}; took an older one", c));
      return dir;
    } catch (const UserError& e) {
      corrupt.push_back(fmt::format("{} is corrupt ({})", dir, e.what()));
    }
  }
  if (!corrupt.empty())  // never start over silently on top of a user's checkpoints
    throw UserError(fmt::format("{}: every checkpoint is corrupt ({} of them; the newest, {}); nothing was changed: move "
                                "them away to start again from step 0",
                                run_dir, corrupt.size(), corrupt.front()));
  return std::nullopt;
}

static int saved_sites(const json& state) { return state.at("saved_by").value("sites", 1); }

std::string describe_layout(const Trainer& t) {
  return fmt::format("pp {} x dp {} x tp {}, ZeRO {}{}", t.pipe->plan.pp, t.groups.dp.size, t.groups.tp.size,
                     parallel::zero_stage(*t.dp), t.outer ? ", DiLoCo" : "");
}

std::string saved_layout(const std::string& dir) {
  try {
    return read_state(dir).at("saved_by").value("layout", "");
  } catch (const std::exception&) {
    return "";
  }
}

// The whole unpadded flat vector `what` ("param", "exp_avg", "exp_avg_sq") of site `site`'s model,
// from every shard.
static at::Tensor assemble(const std::string& dir, const json& state, const char* what, int64_t numel, int site) {
  at::Tensor full = at::zeros({numel});
  int64_t covered = 0;
  for (const json& s : state.at("shards")) {
    const std::string file = s.at("file").get<std::string>();
    if (!model_file_of(file, site, saved_sites(state))) continue;
    torch::serialize::InputArchive a;
    a.load_from(dir + "/" + file);
    at::Tensor part, segs;
    a.read(what, part);
    a.read("segments", segs);
    for (int64_t k = 0; k < segs.size(0); ++k) {
      const int64_t local = segs[k][0].item<int64_t>(), global = segs[k][1].item<int64_t>(), size = segs[k][2].item<int64_t>();
      if (local < 0 || size < 0 || local + size > part.numel() || global < 0 || global + size > numel)
        throw UserError(fmt::format("{}: shard ranges do not fit the model", dir));
      full.narrow(0, global, size).copy_(part.narrow(0, local, size));
      covered += size;
    }
  }
  if (covered != numel) throw UserError(fmt::format("{}: shards cover {} of {} values", dir, covered, numel));
  return full;
}

// UserError unless the checkpoint's parameter names and shapes are the model's.
static void check_layout(const std::string& dir, const json& state, const parallel::FlatLayout& l) {
  const auto names = state.at("layout").at("names").get<std::vector<std::string>>();
  const auto shapes = state.at("layout").at("shapes").get<std::vector<std::vector<int64_t>>>();
  for (size_t i = 0; i < l.names.size(); ++i) {
    auto it = std::find(names.begin(), names.end(), l.names[i]);
    if (it == names.end())
      throw UserError(fmt::format("{}: no parameter {}; saved from a different model", dir, l.names[i]));
    const auto& shape = shapes[static_cast<size_t>(it - names.begin())];
    if (shape != l.shapes[i])
      throw UserError(fmt::format("{}: parameter {} has shape {} but the model expects {}; saved from a "
                                  "different model",
                                  dir, l.names[i], fmt::join(shape, "x"), fmt::join(l.shapes[i], "x")));
  }
  if (names.size() != l.names.size())
    throw UserError(fmt::format("{}: {} parameters, the model has {}; saved from a different model", dir,
                                names.size(), l.names.size()));
}

model::GPT2 load_model(const std::string& path, Config* cfg_out) {
  if (model::is_hf_dir(path)) {  // an imported model: no run, no dataset
    model::GPT2 m = model::load_hf(path);
    if (cfg_out) {
      *cfg_out = Config{};
      cfg_out->model = m.cfg;
      cfg_out->init.from = path;
    }
    return m;
  }
  std::string dir = path;
  if (!path_exists(path + "/state.json")) {
    std::optional<std::string> found = find_latest_checkpoint(
        path, [](const std::string& w) { std::fprintf(stderr, "warning: %s\n", w.c_str()); });
    if (!found) throw UserError(fmt::format("{}: no valid checkpoint (a run or checkpoint directory)", path));
    dir = *found;
  }
  json state = read_state(dir);
  Config cfg = parse_config_text(state.at("config").get<std::string>(), dir + "/state.json");
  // A relative data.dir means the working directory of the training run; from anywhere else,
  // look for it there (eval, generate, export, embed from another folder).
  if (!cfg.data.dir.empty() && fs::path(cfg.data.dir).is_relative() && !path_exists(cfg.data.dir) && state.contains("cwd"))
    if (const fs::path p = fs::path(state["cwd"].get<std::string>()) / cfg.data.dir; path_exists(p.string()))
      cfg.data.dir = p.string();
  model::GPT2 m = model::init_gpt2(cfg.model, 0);
  auto named = model::named_parameters(m);
  parallel::FlatLayout l = parallel::make_layout(named, 1);
  check_layout(dir, state, l);
  at::Tensor full = assemble(dir, state, "param", l.numel, /*site=*/0);
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> views = parallel::views_of(full, l);
  for (size_t i = 0; i < named.size(); ++i) named[i].second.copy_(views[i]);
  if (cfg_out) *cfg_out = cfg;
  return m;
}

// DiLoCo: this rank's outer state from a DiLoCo checkpoint; from one of ordinary training,
// θ_outer = the parameters just loaded. On another number of sites with the same layout inside
// them, a site the checkpoint lacks takes site 0's piece (θ_outer, its momentum and the syncs in
// flight are the same in every site; the compression error is the site's own and starts at zero),
// as its model and inner optimizer come from site 0's (model_file_of).
static void load_outer(Trainer& t, const std::string& dir, const json& state) {
  const std::string mine = outer_file(t, piece_prefix(t));
  const std::string site0 = fmt::format("outer_site0_{}{}", piece_prefix(t), shard_file(t.groups.dp.rank));
  const bool new_site = site_of(t) >= saved_sites(state);
  bool any = false, found = false, found0 = false;
  for (const json& s : state.at("shards")) {
    const std::string f = s.at("file").get<std::string>();
    any = any || f.rfind("outer_", 0) == 0;
    found = found || f == mine;
    found0 = found0 || f == site0;
  }
  if (!any) return parallel::reset_outer(*t.outer);
  if (!found && !(new_site && found0))
    throw UserError(fmt::format("{}: was saved by a DiLoCo run with another layout inside its {} site(s); resume it "
                                "with the same plan in every site (the number of sites may change) or as ordinary "
                                "training (sync.mode = \"step\")",
                                dir, saved_sites(state)));
  torch::serialize::InputArchive a;
  a.load_from(dir + "/" + (found ? mine : site0));
  parallel::OuterState o;
  at::Tensor pending;
  a.read("theta", o.theta), a.read("momentum", o.momentum), a.read("error", o.error), a.read("pending", pending);
  if (!found) o.error.zero_();
  at::Tensor adam_step;  // a site's inner steps (sync.by = "time": not the same in every site)
  if (a.try_read("adam_step", adam_step)) t.adam.step = adam_step.item<int64_t>();
  for (int64_t k = 0; k < pending.size(0); ++k) o.pending.push_back({pending[k][0].item<int64_t>(), pending[k][1].item<int64_t>()});
  parallel::restore_outer_state(*t.outer, o);
}

void load_checkpoint(Trainer& t, const std::string& dir) {
  json state = read_state(dir);
  if (state.at("tokenizer_identity") != t.data.manifest.tokenizer_identity)
    throw UserError(fmt::format("{}: saved for data of another tokenizer than {}", dir, t.cfg.data.dir));
  const parallel::FlatLayout& l = t.model_layout;  // checkpoints hold the whole model
  check_layout(dir, state, l);
  torch::NoGradGuard no_grad;
  at::Tensor param = parallel::param_shard(*t.dp);
  const std::vector<parallel::Segment> segs = model_segments(t, /*for_save=*/false);
  for (auto [what, dst] : {std::pair<const char*, at::Tensor>{"param", param}, {"exp_avg", t.adam.exp_avg},
                           {"exp_avg_sq", t.adam.exp_avg_sq}}) {
    at::Tensor full = assemble(dir, state, what, l.numel, site_of(t));
    dst.zero_();
    for (const parallel::Segment& g : segs) dst.narrow(0, g.local, g.size).copy_(full.narrow(0, g.global, g.size));
  }
  parallel::gather_params(*t.dp);  // ZeRO 1-2: every rank's parameters from the owners' shards
  parallel::pipeline::sync_tied_weights(*t.pipe, *t.dp);
  t.adam.step = state.at("adam_step").get<int64_t>();
  if (t.scaler.enabled && state.contains("loss_scale")) {
    t.scaler.scale = state.at("loss_scale").at("scale").get<double>();
    t.scaler.good_steps = state.at("loss_scale").at("good_steps").get<int64_t>();
  }
  // RNG: this rank's own stream if it saved one, else the first file's.
  std::string rng_file = state.at("shards").at(0).at("file").get<std::string>();
  const std::string own = site_prefix(site_of(t) < saved_sites(state) ? site_of(t) : 0) + piece_prefix(t) +
                          shard_file(parallel::zero_group(*t.dp).rank);
  for (const json& s : state.at("shards"))
    if (s.at("file") == own) rng_file = s.at("file").get<std::string>();
  if (t.outer) load_outer(t, dir, state);
  if (const int was = saved_sites(state), now = t.outer ? parallel::num_sites(*t.outer) : 1;
      t.outer && was != now && t.world.world.rank == 0) {
    auto sites = [](int a, int b) { return a == b ? fmt::format("site {}", a) : fmt::format("sites {}-{}", a, b); };
    const std::string what = now > was ? sites(was, now - 1) + " start from site 0's model"
                                       : "the models of " + sites(now, was - 1) + " are left out";
    std::fprintf(stderr, "sync: the checkpoint has %d site(s), this run %d: %s\n", was, now, what.c_str());
  }
  torch::serialize::InputArchive a;
  a.load_from(dir + "/" + rng_file);
  at::Tensor rng;
  for (const auto& [name, device] : rng_devices(t)) {  // a CPU run's checkpoint has no "rng.cuda"
    if (a.try_read("rng." + name, rng)) host::set_generator_state(device, rng);
    if (a.try_read("rng.tp_split." + name, rng)) parallel::tensor::set_split_rng_state(device, rng);
  }
  t.step = state.at("step").get<int64_t>();
  if (!t.round_steps.empty() && state.contains("sync_round_steps") &&
      state.at("sync_round_steps").size() == t.round_steps.size())
    t.round_steps = state.at("sync_round_steps").get<std::vector<int64_t>>();
  restore_train_position(t, {state.at("loader").at("epoch").get<int64_t>(),
                             state.at("loader").at("cursor").get<int64_t>()});
}

}  // namespace slm::train
