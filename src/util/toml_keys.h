// util/toml_keys.h: strict TOML: parse with one-line errors ("<where>:<line>: <what>"), reject
// non-finite numbers, and reject keys a section does not know, by name; the range of an integer
// setting.
#pragma once
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <toml++/toml.h>
#include <type_traits>

namespace slm {

// The largest integer setting in magnitude (an `int` setting: int's range): far beyond any real
// count or size, and small enough that sums and small multiples of settings stay within int64.
constexpr int64_t kIntSettingLimit = int64_t{1} << 40;
template <typename T>
constexpr int64_t int_setting_limit() {
  return std::is_same_v<T, int> ? std::numeric_limits<int>::max() : kIntSettingLimit;
}

// UserError "<where>:<line>: <description>" for malformed TOML, and for an inf or nan anywhere in
// it (no setting of slmtrain takes one).
toml::table parse_toml(const std::string& text, const std::string& where);
// UserError "<where>: unknown key '<k>'" for the first key of t not in allowed.
void reject_unknown_keys(const toml::table& t, const std::set<std::string>& allowed, const std::string& where);
// Where two flat TOML texts ("[section]" lines, then "key = value" lines) first differ, in words:
// "dist.backend is \"gloo\" here, \"nccl\" on rank 0"; "" when they are the same.
std::string first_difference(const std::string& mine, const std::string& theirs, int their_rank);

}  // namespace slm
