// util/toml_keys.h: strict TOML: parse with one-line errors ("<where>:<line>: <what>"), reject
// non-finite numbers, and reject keys a section does not know, by name.
#pragma once
#include <set>
#include <string>
#include <toml++/toml.h>

namespace slm {

// UserError "<where>:<line>: <description>" for malformed TOML, and for an inf or nan anywhere in
// it (no setting of slmtrain takes one).
toml::table parse_toml(const std::string& text, const std::string& where);
// UserError "<where>: unknown key '<k>'" for the first key of t not in allowed.
void reject_unknown_keys(const toml::table& t, const std::set<std::string>& allowed, const std::string& where);

}  // namespace slm
