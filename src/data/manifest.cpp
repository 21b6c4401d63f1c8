// data/manifest.cpp: see manifest.h.
#include "data/manifest.h"

#include <filesystem>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/files.h"
#include "util/hash.h"

namespace slm::data {
using json = nlohmann::ordered_json;

static json split_json(const SplitInfo& s) {
  json shards = json::array();
  for (const auto& e : s.shards) {
    json j = {{"file", e.file}, {"tokens", e.tokens}};
    if (!e.xxh3.empty()) j["xxh3"] = e.xxh3;
    shards.push_back(j);
  }
  return {{"documents", s.documents}, {"bytes", s.bytes}, {"tokens", s.tokens}, {"shards", shards}};
}

static SplitInfo split_from(const json& j) {
  SplitInfo s;
  s.documents = j.at("documents").get<int64_t>();
  s.bytes = j.at("bytes").get<int64_t>();
  s.tokens = j.at("tokens").get<int64_t>();
  for (const auto& e : j.at("shards"))
    s.shards.push_back({e.at("file").get<std::string>(), e.at("tokens").get<int64_t>(),
                        e.value("xxh3", std::string())});
  return s;
}

void write_manifest(const std::string& dir, const Manifest& m) {
  json sources = json::array();
  for (const auto& s : m.sources)
    sources.push_back({{"path", s.path}, {"bytes", s.bytes}, {"documents", s.documents}});
  json j = {
      {"format", "slmtrain-dataset"},
      {"version", m.version},
      {"tokenizer", {{"path", m.tokenizer_path}, {"identity", m.tokenizer_identity},
                     {"vocab_size", m.vocab_size}, {"eot_token", m.eot_token}, {"eot_id", m.eot_id}}},
      {"bytes_per_token", m.bytes_per_token},
      {"val_fraction", m.val_fraction},
      {"val_split", m.val_split},
      {"seed", m.seed},
      {"corpus", {{"format", m.corpus.format}, {"separator", m.corpus.separator},
                  {"jsonl_field", m.corpus.jsonl_field}}},
      {"sources", sources},
      {"splits", {{"train", split_json(m.train)}, {"val", split_json(m.val)}}},
  };
  write_file_atomic(dir + "/manifest.json", j.dump(2) + "\n");
}

std::string tokenizer_path_from(const std::string& dataset_dir, const std::string& tokenizer_dir) {
  namespace fs = std::filesystem;
  const fs::path tok = fs::absolute(tokenizer_dir).lexically_normal();
  const fs::path rel = tok.lexically_relative(fs::absolute(dataset_dir).lexically_normal());
  return rel.empty() ? tok.string() : rel.string();
}

Manifest read_manifest(const std::string& dir) {
  const std::string path = dir + "/manifest.json";
  if (dir.empty())
    throw UserError("no dataset given: set data.dir in the config (-c FILE) or with --set data.dir=DIR "
                    "(a folder made by `slm data prepare`)");
  if (!path_exists(dir)) throw UserError(fmt::format("{}: dataset directory not found", dir));
  if (!path_exists(path)) throw UserError(fmt::format("{}: missing; not a prepared dataset", path));
  Manifest m;
  try {
    json j = json::parse(read_file(path));
    if (j.at("format") != "slmtrain-dataset") throw UserError(path + ": not an slmtrain manifest");
    m.version = j.at("version").get<int>();
    if (m.version != kManifestVersion)
      throw UserError(fmt::format("{}: manifest version {} is not supported (expected {})", path,
                                  m.version, kManifestVersion));
    const json& t = j.at("tokenizer");
    m.tokenizer_path = t.at("path").get<std::string>();
    const std::filesystem::path here = std::filesystem::path(dir) / m.tokenizer_path;
    if (std::filesystem::path(m.tokenizer_path).is_relative() && (path_exists(here.string()) || !path_exists(m.tokenizer_path)))
      m.tokenizer_path = here.lexically_normal().string();
    m.tokenizer_identity = t.at("identity").get<std::string>();
    m.vocab_size = t.at("vocab_size").get<int64_t>();
    m.eot_token = t.at("eot_token").get<std::string>();
    m.eot_id = t.at("eot_id").get<int64_t>();
    m.bytes_per_token = j.at("bytes_per_token").get<int>();
    m.val_fraction = j.at("val_fraction").get<double>();
    m.val_split = j.value("val_split", std::string("documents"));  // absent before the tail split
    m.seed = j.at("seed").get<uint64_t>();
    m.corpus.format = j.at("corpus").at("format").get<std::string>();
    m.corpus.separator = j.at("corpus").at("separator").get<std::string>();
    m.corpus.jsonl_field = j.at("corpus").at("jsonl_field").get<std::string>();
    for (const auto& s : j.at("sources"))
      m.sources.push_back({s.at("path").get<std::string>(), s.at("bytes").get<int64_t>(),
                           s.at("documents").get<int64_t>()});
    m.train = split_from(j.at("splits").at("train"));
    m.val = split_from(j.at("splits").at("val"));
  } catch (const json::exception& e) {
    throw UserError(fmt::format("{}: malformed manifest ({})", path, e.what()));
  }
  return m;
}

static std::vector<Shard> open_split(const std::string& dir, const SplitInfo& s, const Manifest& m) {
  std::vector<Shard> shards;
  for (const auto& e : s.shards) {
    Shard sh(dir + "/" + e.file);
    if (sh.size() != e.tokens || sh.bytes_per_token() != m.bytes_per_token)
      throw UserError(fmt::format("{}: has {} tokens of {} bytes, manifest says {} of {}",
                                  sh.path(), sh.size(), sh.bytes_per_token(), e.tokens, m.bytes_per_token));
    if (int64_t i = find_token_outside(sh, m.vocab_size); i >= 0)
      throw UserError(fmt::format("{}: corrupt shard: token {} at position {} is outside the "
                                  "vocabulary of {}",
                                  sh.path(), sh[i], i, m.vocab_size));
    if (!e.xxh3.empty() && hash_hex(sh.file_bytes()) != e.xxh3)
      throw UserError(fmt::format("{}: corrupt shard: its checksum differs from the manifest's (the file "
                                  "changed after `slm data prepare`; prepare the data again)",
                                  sh.path()));
    shards.push_back(std::move(sh));
  }
  return shards;
}

Dataset open_dataset(const std::string& dir, const std::string& expected_tokenizer_identity) {
  Dataset d{dir, read_manifest(dir), {}, {}, {}, {}};
  const Manifest& m = d.manifest;
  if (!expected_tokenizer_identity.empty() && expected_tokenizer_identity != m.tokenizer_identity)
    throw UserError(fmt::format(
        "{}/manifest.json: prepared with a different tokenizer ({}, identity {}) than the one "
        "given (identity {}); prepare the data again with this tokenizer",
        dir, m.tokenizer_path, m.tokenizer_identity.substr(0, 12),
        expected_tokenizer_identity.substr(0, 12)));
  d.train = open_split(dir, m.train, m);
  d.val = open_split(dir, m.val, m);
  return d;
}

}  // namespace slm::data
