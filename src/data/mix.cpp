// data/mix.cpp: see mix.h.
#include "data/mix.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "util/error.h"

namespace slm::data {
namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

MixEntry parse_entry(const std::string& text) {
  const size_t eq = text.rfind('=');
  const std::string dir = eq == std::string::npos ? "" : trim(text.substr(0, eq));
  const std::string share = eq == std::string::npos ? "" : trim(text.substr(eq + 1));
  char* end = nullptr;
  const double v = share.empty() ? 0 : std::strtod(share.c_str(), &end);
  if (dir.empty() || share.empty() || *end != '\0')
    throw UserError(fmt::format("data: mix entry \"{}\" is not DIR=SHARE (e.g. \"data/code=0.25\")", text));
  if (!(v > 0 && v < 1))
    throw UserError(fmt::format("data: mix share of {} is {}; a share lies between 0 and 1", dir, share));
  return {dir, v};
}

}  // namespace

std::vector<MixEntry> parse_mix(const std::string& text) {
  std::vector<MixEntry> out;
  if (trim(text).empty()) return out;
  double sum = 0;
  for (size_t start = 0; start <= text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    out.push_back(parse_entry(trim(text.substr(start, comma - start))));
    sum += out.back().share;
    start = comma + 1;
  }
  if (sum >= 1)
    throw UserError(fmt::format("data: the mix's shares sum to {:g}; data.dir takes the rest, so they must sum to "
                                "less than 1",
                                sum));
  return out;
}

Dataset open_mixed_dataset(const std::string& dir, const std::vector<MixEntry>& mix) {
  Dataset d = open_dataset(dir);
  if (mix.empty()) return d;
  double rest = 1;
  for (const MixEntry& e : mix) rest -= e.share;
  d.train_mix = {{static_cast<int64_t>(d.train.size())}, {rest}};
  for (const MixEntry& e : mix) {
    Dataset other = open_dataset(e.dir, d.manifest.tokenizer_identity);
    d.train_mix.shards.push_back(static_cast<int64_t>(other.train.size()));
    d.train_mix.shares.push_back(e.share);
    for (Shard& s : other.train) d.train.push_back(std::move(s));
    d.mix_val.push_back({e.dir, std::move(other.val)});
  }
  return d;
}

}  // namespace slm::data
