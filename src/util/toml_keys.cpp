// util/toml_keys.cpp: see toml_keys.h.
#include "util/toml_keys.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <sstream>
#include <utility>
#include <vector>

#include "util/error.h"
#include "util/utf8.h"

namespace slm {

namespace {
// UserError for the first inf or nan anywhere under n: no setting of slmtrain takes one.
void reject_non_finite(const toml::node& n, const std::string& where) {
  if (auto* f = n.as_floating_point(); f && !std::isfinite(f->get()))
    throw UserError(where + ":" + std::to_string(n.source().begin.line) + ": " +
                    (std::isnan(f->get()) ? "nan" : "inf") + " is not allowed here; give a finite number");
  if (auto* t = n.as_table())
    for (const auto& [k, v] : *t) reject_non_finite(v, where);
  if (auto* a = n.as_array())
    for (const auto& v : *a) reject_non_finite(v, where);
}
}  // namespace

toml::table parse_toml(const std::string& text, const std::string& where) {
  try {
    toml::table t = toml::parse(text, where);
    reject_non_finite(t, where);
    return t;
  } catch (const toml::parse_error& e) {
    throw UserError(where + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()));
  }
}

void reject_unknown_keys(const toml::table& t, const std::set<std::string>& allowed, const std::string& where) {
  for (const auto& [k, v] : t)
    if (!allowed.count(std::string(k.str()))) throw UserError(where + ": unknown key '" + std::string(k.str()) + "'");
}

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// "key = value" -> {key, value}; the whole line as the value when it has no " = ".
std::pair<std::string, std::string> key_value(const std::string& line) {
  const size_t eq = line.find(" = ");
  if (eq == std::string::npos) return {"", line};
  return {line.substr(0, eq), line.substr(eq + 3)};
}

std::string shown(const std::string& value) {
  return value.size() > 60 ? std::string(utf8_prefix(value, 60)) + "..." : value;
}

}  // namespace

std::string first_difference(const std::string& mine, const std::string& theirs, int their_rank) {
  const std::vector<std::string> a = lines_of(mine), b = lines_of(theirs);
  std::string section;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string x = i < a.size() ? a[i] : "(nothing)", y = i < b.size() ? b[i] : "(nothing)";
    if (x.size() > 2 && x.front() == '[' && x.back() == ']') section = x.substr(1, x.size() - 2);
    if (x == y) continue;
    const auto [kx, vx] = key_value(x);
    const auto [ky, vy] = key_value(y);
    if (!kx.empty() && kx == ky)
      return fmt::format("{}{} is {} here, {} on rank {}", section.empty() ? "" : section + ".", kx, shown(vx), shown(vy),
                         their_rank);
    return fmt::format("line {} is '{}' here, '{}' on rank {}", i + 1, shown(x), shown(y), their_rank);
  }
  return "";
}

}  // namespace slm
