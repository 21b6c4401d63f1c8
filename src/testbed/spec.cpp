// testbed/spec.cpp: see spec.h.
#include "testbed/spec.h"

#include <algorithm>
#include <fmt/format.h>
#include <set>
#include <toml++/toml.h>

#include "util/error.h"
#include "util/toml_keys.h"

namespace slm::testbed {

int TestbedSpec::world() const {
  int n = 0;
  for (const SiteSpec& s : sites) n += s.ranks;
  return n;
}

namespace {

// A number in [0, max]. The upper bounds keep every conversion that follows exact: tc's kbit and
// ms, the delayer's timespecs, the cgroup's quota (llround of cpus x 100000 us), the socket buffer
// sysctl (an int of bytes), the planner's bytes of memory_gb.
double number(const toml::table& t, const char* key, double fallback, const std::string& where, double max) {
  const toml::node* n = t.get(key);
  if (!n) return fallback;
  if (auto v = n->value<double>()) {
    if (*v < 0) throw UserError(fmt::format("{}: '{}' must be >= 0", where, key));
    if (*v > max) throw UserError(fmt::format("{}: '{}' must be at most {}", where, key, max));
    return *v;
  }
  throw UserError(fmt::format("{}: '{}' must be a number", where, key));
}

LinkSpec link_of(const toml::table& t, const std::string& where) {
  LinkSpec l{number(t, "delay_ms", 0, where, 1e6), number(t, "rate_mbit", 0, where, 1e7)};
  l.loss_pct = number(t, "loss_pct", 0, where, 100);
  l.jitter_ms = number(t, "jitter_ms", 0, where, 1e6);
  l.down_at_s = number(t, "down_at_s", 0, where, 1e9);
  l.down_for_s = number(t, "down_for_s", 0, where, 1e9);
  if (t.get("down_at_s") && l.down_for_s <= 0)
    throw UserError(fmt::format("{}: 'down_at_s' needs 'down_for_s' (how long the link is down)", where));
  return l;
}

// One [[site]] table (i: its place, for its default name and the errors).
SiteSpec site_of(const toml::node& node, size_t i, const std::string& where) {
  const std::string w = fmt::format("{}: site {}", where, i);
  const toml::table* st = node.as_table();
  if (!st) throw UserError(w + ": must be a table");
  reject_unknown_keys(*st, {"name", "ranks", "cpus", "device", "memory_gb", "price_per_hour"}, w);
  SiteSpec site;
  site.name = st->get("name") ? st->get("name")->value_or(std::string()) : fmt::format("site{}", i);
  const toml::node* rn = st->get("ranks");  // an integer node only: toml++'s float-to-integer cast is UB out of range
  auto ranks = !rn ? std::optional<int64_t>(1) : rn->is_integer() ? rn->value<int64_t>() : std::nullopt;
  if (!ranks || *ranks < 1 || *ranks > 65536) throw UserError(w + ": 'ranks' must be 1..65536");
  site.ranks = static_cast<int>(*ranks);
  site.cpus = number(*st, "cpus", 0, w, 4096);
  if (auto* d = st->get("device")) {
    auto v = d->value<std::string>();
    if (!v || v->empty()) throw UserError(w + ": 'device' must be a non-empty string");
    site.device = *v;
  }
  site.memory_gb = number(*st, "memory_gb", 0, w, 1e9);
  site.price_per_hour = number(*st, "price_per_hour", 0, w, 1e9);
  return site;
}

// One [[link]] table between two of s's sites, not yet joined by another.
PairSpec pair_of(const toml::node& node, size_t i, const TestbedSpec& s, const std::string& where) {
  const std::string w = fmt::format("{}: link {}", where, i);
  const toml::table* lt = node.as_table();
  if (!lt) throw UserError(w + ": must be a table");
  reject_unknown_keys(*lt, {"sites", "delay_ms", "rate_mbit", "loss_pct", "jitter_ms", "down_at_s", "down_for_s"}, w);
  const toml::array* names = lt->get("sites") ? lt->get("sites")->as_array() : nullptr;
  if (!names || names->size() != 2) throw UserError(w + ": 'sites' must name two sites");
  PairSpec p;
  int* ends[2] = {&p.a, &p.b};
  for (size_t k = 0; k < 2; ++k) {
    const std::string n = (*names)[k].value_or(std::string());
    int found = -1;
    for (size_t j = 0; j < s.sites.size(); ++j)
      if (s.sites[j].name == n) found = static_cast<int>(j);
    if (found < 0) throw UserError(fmt::format("{}: no site named '{}'", w, n));
    *ends[k] = found;
  }
  if (p.a == p.b) throw UserError(w + ": a link joins two different sites (use [inside] within a site)");
  for (size_t j = 0; j < s.pairs.size(); ++j)  // one would silently win over the other
    if (std::minmax(s.pairs[j].a, s.pairs[j].b) == std::minmax(p.a, p.b))
      throw UserError(fmt::format("{}: sites '{}' and '{}' already have a link (link {}); give one per pair", w,
                                  s.sites[static_cast<size_t>(p.a)].name, s.sites[static_cast<size_t>(p.b)].name, j));
  p.link = link_of(*lt, w);
  return p;
}

}  // namespace

TestbedSpec parse_testbed(const std::string& text, const std::string& where) {
  toml::table t = parse_toml(text, where);
  reject_unknown_keys(t, {"name", "inside", "site", "link", "tcp_buffer_mb", "delay"}, where);
  TestbedSpec s;
  if (auto* n = t.get("name")) {
    auto v = n->value<std::string>();
    if (!v || v->empty() || v->size() > 8 || v->find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789") != std::string::npos)
      throw UserError(fmt::format("{}: 'name' must be 1-8 lowercase letters or digits", where));
    s.name = *v;
  }
  s.tcp_buffer_mb = number(t, "tcp_buffer_mb", s.tcp_buffer_mb, where, 2047);
  if (auto* n = t.get("delay")) {
    s.delay = n->value_or(std::string());
    if (s.delay != "auto" && s.delay != "netem" && s.delay != "delayer")
      throw UserError(fmt::format("{}: 'delay' must be \"auto\", \"netem\" or \"delayer\"", where));
  }
  if (auto* in = t.get("inside")) {
    if (!in->as_table()) throw UserError(where + ": [inside] must be a table");
    reject_unknown_keys(*in->as_table(), {"delay_ms", "rate_mbit"}, where + ": [inside]");
    s.inside = link_of(*in->as_table(), where + ": [inside]");
  }
  const toml::array* sites = t.get("site") ? t.get("site")->as_array() : nullptr;
  if (!sites || sites->empty()) throw UserError(where + ": no [[site]] tables");
  for (size_t i = 0; i < sites->size(); ++i) {
    SiteSpec site = site_of((*sites)[i], i, where);
    for (const SiteSpec& o : s.sites)
      if (o.name == site.name) throw UserError(fmt::format("{}: two sites named '{}'", where, site.name));
    s.sites.push_back(site);
  }
  if (s.sites.size() > 200) throw UserError(where + ": at most 200 sites");
  if (const toml::array* links = t.get("link") ? t.get("link")->as_array() : nullptr)
    for (size_t i = 0; i < links->size(); ++i) s.pairs.push_back(pair_of((*links)[i], i, s, where));
  return s;
}

void check_emulatable(const TestbedSpec& s, const std::string& where) {
  for (const SiteSpec& site : s.sites) {
    if (site.ranks > kMaxEmulatedRanks)
      throw UserError(fmt::format("{}: site '{}' has {} ranks; the testbed emulates at most {} per site", where,
                                  site.name, site.ranks, kMaxEmulatedRanks));
    if (site.device != "cpu")
      throw UserError(fmt::format("{}: site '{}' has device '{}'; the testbed runs CPU ranks only (this file still "
                                  "describes that cluster to `slm plan auto`)",
                                  where, site.name, site.device));
  }
}

int site_of(const TestbedSpec& s, int rank) {
  for (size_t i = 0; i < s.sites.size(); ++i) {
    if (rank < s.sites[i].ranks) return static_cast<int>(i);
    rank -= s.sites[i].ranks;
  }
  throw UserError(fmt::format("testbed: rank {} is beyond the {} ranks", rank, s.world()));
}

static int local_index(const TestbedSpec& s, int rank) {
  const int site = site_of(s, rank);
  for (int i = 0; i < site; ++i) rank -= s.sites[static_cast<size_t>(i)].ranks;
  return rank;
}

std::string rank_address(const TestbedSpec& s, int rank) {
  return fmt::format("10.77.{}.{}", site_of(s, rank), 4 * local_index(s, rank) + 2);
}
std::string router_address(const TestbedSpec& s, int rank) {
  return fmt::format("10.77.{}.{}", site_of(s, rank), 4 * local_index(s, rank) + 1);
}
std::string site_subnet(int site) { return fmt::format("10.77.{}.0/24", site); }

LinkSpec link_between(const TestbedSpec& s, int a, int b) {
  if (a == b) return s.inside;
  for (const PairSpec& p : s.pairs)
    if ((p.a == a && p.b == b) || (p.a == b && p.b == a)) return p.link;
  return {};
}

}  // namespace slm::testbed
