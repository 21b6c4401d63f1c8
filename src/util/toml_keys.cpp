// util/toml_keys.cpp: see toml_keys.h.
#include "util/toml_keys.h"

#include "util/error.h"

namespace slm {

toml::table parse_toml(const std::string& text, const std::string& where) {
  try {
    return toml::parse(text, where);
  } catch (const toml::parse_error& e) {
    throw UserError(where + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()));
  }
}

void reject_unknown_keys(const toml::table& t, const std::set<std::string>& allowed, const std::string& where) {
  for (const auto& [k, v] : t)
    if (!allowed.count(std::string(k.str()))) throw UserError(where + ": unknown key '" + std::string(k.str()) + "'");
}

}  // namespace slm
