// util/toml_keys.cpp: see toml_keys.h.
#include "util/toml_keys.h"

#include <cmath>

#include "util/error.h"

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

}  // namespace slm
