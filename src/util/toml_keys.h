// util/toml_keys.h: strict TOML tables: reject keys a section does not know, by name.
#pragma once
#include <set>
#include <string>
#include <toml++/toml.h>

namespace slm {

// UserError "<where>: unknown key '<k>'" for the first key of t not in allowed.
void reject_unknown_keys(const toml::table& t, const std::set<std::string>& allowed, const std::string& where);

}  // namespace slm
