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
// Where two flat TOML texts ("[section]" lines, then "key = value" lines) first differ, in words:
// "dist.backend is \"gloo\" here, \"nccl\" on rank 0"; "" when they are the same.
std::string first_difference(const std::string& mine, const std::string& theirs, int their_rank);

}  // namespace slm
