// tokenizer/hf_files.cpp: see hf_files.h.
#include "tokenizer/hf_files.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <unordered_set>

#include "tokenizer/byte_unicode.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::tokenizer {
using json = nlohmann::json;  // not ordered_json: its per-key linear search is quadratic here

static std::string token_text(const BpeModel& m, int32_t id) {
  return m.is_special[id] ? m.id_to_bytes[id] : bytes_to_unicode_str(m.id_to_bytes[id]);
}

void save_tokenizer(const BpeModel& m, const std::string& dir, bool overwrite) {
  AtomicDir out(dir, overwrite);
  write_tokenizer_files(m, out.dir(), 1024);
  out.commit();
}

void write_tokenizer_files(const BpeModel& m, const std::string& dir, int64_t model_max_length) {
  std::string vocab = "{";  // written by hand to keep id order
  try {
    for (int32_t id = 0; id < m.vocab_size(); ++id)
      if (m.present[id])
        vocab += (vocab.size() > 1 ? ", " : "") + json(token_text(m, id)).dump() + ": " +
                 std::to_string(id);
  } catch (const json::exception&) {
    throw UserError(fmt::format("{}: a special token is not valid UTF-8", dir));
  }
  vocab += "}";
  std::string merges = "#version: 0.2\n";
  for (auto [a, b] : m.merges) merges += token_text(m, a) + " " + token_text(m, b) + "\n";
  write_file_atomic(dir + "/vocab.json", vocab);
  write_file_atomic(dir + "/merges.txt", merges);
  if (int32_t eot = m.special_id("<|endoftext|>"); eot >= 0) {
    nlohmann::ordered_json special = {{"bos_token", "<|endoftext|>"},
                    {"eos_token", "<|endoftext|>"},
                    {"unk_token", "<|endoftext|>"}};
    nlohmann::ordered_json config = special;
    config["tokenizer_class"] = "GPT2Tokenizer";
    config["add_prefix_space"] = false;
    config["model_max_length"] = model_max_length;
    write_file_atomic(dir + "/special_tokens_map.json", special.dump(2) + "\n");
    write_file_atomic(dir + "/tokenizer_config.json", config.dump(2) + "\n");
  }
}

static std::string pick(const std::string& dir, const char* a, const char* b) {
  std::string pa = dir + "/" + a, pb = dir + "/" + b;
  if (path_exists(pa)) return pa;
  if (path_exists(pb)) return pb;
  if (!path_exists(dir)) throw UserError(fmt::format("{}: tokenizer directory not found", dir));
  throw UserError(fmt::format("{}: no {} (or {}, or tokenizer.json) in the tokenizer directory", dir, a, b));
}

static json parse_json(const std::string& path) {
  try {
    return json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw UserError(fmt::format("{}: not valid JSON ({})", path, e.what()));
  }
}

// The parts of a tokenizer.json around its BPE model that change how text is encoded must be
// GPT-2's, which slm implements exactly: no normalizer, one ByteLevel pre-tokenizer with GPT-2's
// split (use_regex) and no prefix space, and a BPE model without dropout, byte fallback, subword
// affixes or ignore_merges. Anything else is refused by name rather than encoded differently.
static void check_gpt2_parts(const std::string& path, const json& j, const json& model) {
  const auto refuse = [&](const std::string& what) {
    throw UserError(fmt::format("{}: {}; slm encodes exactly as GPT-2's byte-level BPE and does not support it", path, what));
  };
  const auto type_of = [](const json& part) { return part.is_object() ? part.value("type", std::string("?")) : std::string("?"); };
  if (j.contains("normalizer") && !j["normalizer"].is_null()) refuse("normalizer " + type_of(j["normalizer"]));
  json pre = j.contains("pre_tokenizer") ? j["pre_tokenizer"] : json();
  if (pre.is_object() && pre.value("type", "") == "Sequence" && pre.contains("pretokenizers")) {
    std::string kinds;
    for (const json& p : pre["pretokenizers"]) kinds += (kinds.empty() ? "" : ", ") + type_of(p);
    if (pre["pretokenizers"].size() != 1) refuse("pre_tokenizer Sequence [" + kinds + "]");
    pre = pre["pretokenizers"][0];
  }
  if (!pre.is_object() || pre.value("type", "") != "ByteLevel")
    throw UserError(fmt::format("{}: not a byte-level BPE (GPT-2's pre-tokenizer is ByteLevel, this is {})", path,
                                pre.is_null() ? std::string("none") : type_of(pre)));
  if (pre.value("add_prefix_space", false))
    throw UserError(fmt::format("{}: add_prefix_space is true; slm encodes as GPT-2 (no prefix space)", path));
  if (!pre.value("use_regex", true)) refuse("pre_tokenizer ByteLevel with use_regex false");
  if (model.contains("dropout") && !model["dropout"].is_null()) refuse("model.dropout");
  if (model.value("byte_fallback", false)) refuse("model.byte_fallback");
  if (model.value("ignore_merges", false)) refuse("model.ignore_merges");
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (model.contains(affix) && model[affix].is_string() && !model[affix].get<std::string>().empty())
      refuse(std::string("model.") + affix);
}

// tokenizer.json (the `tokenizers` library's single file, all transformers 5 writes): its BPE
// vocabulary, merges (as "a b" lines) and added tokens; refused unless it is GPT-2's byte-level BPE.
static void read_tokenizer_json(const std::string& path, json* vocab, std::string* merges) {
  const json j = parse_json(path);
  const json& model = j.contains("model") ? j["model"] : json();
  if (!model.is_object() || model.value("type", "") != "BPE" || !model.contains("vocab") || !model.contains("merges"))
    throw UserError(fmt::format("{}: not a BPE tokenizer (model.type {})", path,
                                model.is_object() ? model.value("type", "?") : "?"));
  check_gpt2_parts(path, j, model);
  *vocab = model["vocab"];
  if (j.contains("added_tokens"))
    for (const json& t : j["added_tokens"]) (*vocab)[t.at("content").get<std::string>()] = t.at("id");
  for (const json& m : model["merges"])  // "a b" (tokenizers < 0.20) or ["a", "b"]
    *merges += (m.is_string() ? m.get<std::string>() : m.at(0).get<std::string>() + " " + m.at(1).get<std::string>()) + "\n";
}

// The files of a tokenizer folder: vocab.json + merges.txt (or GPT-2's original encoder.json +
// vocab.bpe), else tokenizer.json.
struct TokenizerFiles {
  json vocab;
  std::string vocab_path, merges_path, merges;
};
static TokenizerFiles read_files(const std::string& dir) {
  TokenizerFiles f;
  if (!path_exists(dir + "/vocab.json") && !path_exists(dir + "/encoder.json") && path_exists(dir + "/tokenizer.json")) {
    f.vocab_path = f.merges_path = dir + "/tokenizer.json";
    read_tokenizer_json(f.vocab_path, &f.vocab, &f.merges);
  } else {
    f.vocab_path = pick(dir, "vocab.json", "encoder.json");
    f.merges_path = pick(dir, "merges.txt", "vocab.bpe");
    f.vocab = parse_json(f.vocab_path);
    f.merges = read_file(f.merges_path);
  }
  if (!f.vocab.is_object() || f.vocab.empty())
    throw UserError(fmt::format("{}: expected a non-empty object of token -> id", f.vocab_path));
  return f;
}

// Each id's token text as in the file (m.present: which ids are used).
static std::vector<std::string> texts_by_id(const TokenizerFiles& f, BpeModel& m) {
  std::vector<std::string> text_of;
  for (auto& [text, idv] : f.vocab.items()) {
    if (!idv.is_number_integer() || idv.get<int64_t>() < 0 || idv.get<int64_t>() > (1 << 24))
      throw UserError(fmt::format("{}: token \"{}\" has a bad id", f.vocab_path, text));
    auto id = static_cast<size_t>(idv.get<int64_t>());
    if (id >= text_of.size()) {
      text_of.resize(id + 1);
      m.present.resize(id + 1, false);
    }
    if (m.present[id]) throw UserError(fmt::format("{}: id {} is used twice", f.vocab_path, id));
    m.present[id] = true;
    text_of[id] = text;
  }
  return text_of;
}

// The merges ("a b" lines, an optional #version line first) into m.merges; returns the ids of the
// merged tokens. Every part must be in the vocabulary.
static std::unordered_set<int32_t> read_merges(const TokenizerFiles& f, const std::vector<std::string>& text_of,
                                               BpeModel& m) {
  std::unordered_map<std::string, int32_t> id_of_text;
  for (size_t id = 0; id < text_of.size(); ++id)
    if (m.present[id]) id_of_text[text_of[id]] = static_cast<int32_t>(id);
  std::unordered_set<int32_t> merged;
  size_t line_no = 0;
  for (size_t pos = 0; pos < f.merges.size();) {
    size_t nl = f.merges.find('\n', pos);
    if (nl == std::string::npos) nl = f.merges.size();
    std::string line = f.merges.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    size_t sp = line.find(' ');
    if (sp == std::string::npos || line.find(' ', sp + 1) != std::string::npos)
      throw UserError(fmt::format("{}:{}: expected two tokens separated by one space", f.merges_path,
                                  line_no));
    std::string a = line.substr(0, sp), b = line.substr(sp + 1);
    auto ia = id_of_text.find(a), ib = id_of_text.find(b), ir = id_of_text.find(a + b);
    for (auto [it, t] : {std::pair{ia, &a}, std::pair{ib, &b}})
      if (it == id_of_text.end())
        throw UserError(fmt::format("{}:{}: token \"{}\" is not in {}", f.merges_path, line_no, *t,
                                    f.vocab_path));
    if (ir == id_of_text.end())
      throw UserError(fmt::format("{}:{}: merged token \"{}\" is not in {}", f.merges_path, line_no,
                                  a + b, f.vocab_path));
    m.merges.emplace_back(ia->second, ib->second);
    merged.insert(ir->second);
  }
  return merged;
}

BpeModel load_tokenizer(const std::string& dir) {
  const TokenizerFiles f = read_files(dir);
  BpeModel m;
  const std::vector<std::string> text_of = texts_by_id(f, m);
  const std::unordered_set<int32_t> merged = read_merges(f, text_of, m);
  m.id_to_bytes.resize(text_of.size());
  m.is_special.assign(text_of.size(), false);
  for (size_t id = 0; id < text_of.size(); ++id) {
    if (!m.present[id]) continue;
    std::optional<std::string> bytes = unicode_str_to_bytes(text_of[id]);
    bool is_byte = bytes && bytes->size() == 1;
    bool is_merge = merged.count(static_cast<int32_t>(id)) > 0;
    if (bytes && (is_byte || is_merge)) {
      m.id_to_bytes[id] = *bytes;
    } else {
      m.is_special[id] = true;  // neither a byte nor a merge result: an added/special token
      m.id_to_bytes[id] = text_of[id];
    }
  }
  index_model(m, f.vocab_path);
  return m;
}

}  // namespace slm::tokenizer
