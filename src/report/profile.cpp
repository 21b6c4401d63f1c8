// report/profile.cpp: see profile.h.
#include "report/profile.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "report/trace.h"
#include "util/error.h"
#include "util/files.h"

namespace slm::report {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool has_any(const std::string& s, std::initializer_list<const char*> words) {
  for (const char* w : words)
    if (s.find(w) != std::string::npos) return true;
  return false;
}

bool is_gpu(const std::string& category) {
  return category == "kernel" || category == "gpu_memcpy" || category == "gpu_memset";
}

// "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, ...)"
// -> "at::native::vectorized_layer_norm_kernel": a kernel's name without its template arguments and
// parameters (the instances of one kernel in one row), at most 80 characters.
std::string short_name(std::string n) {
  if (n.rfind("void ", 0) == 0) n.erase(0, 5);
  for (size_t at; (at = n.find("(anonymous namespace)::")) != std::string::npos;) n.erase(at, 23);
  n = n.substr(0, n.find_first_of("<("));
  return n.size() > 80 ? n.substr(0, 77) + "..." : n;
}

// Rows of a name -> row map, largest first.
std::vector<ProfileRow> largest_first(const std::map<std::string, ProfileRow>& m) {
  std::vector<ProfileRow> rows;
  for (const auto& [name, row] : m) rows.push_back(row);
  std::sort(rows.begin(), rows.end(), [](const ProfileRow& a, const ProfileRow& b) { return a.ms > b.ms; });
  return rows;
}

void add(std::map<std::string, ProfileRow>& m, const std::string& name, double ms) {
  ProfileRow& r = m[name];
  r.name = name, r.ms += ms, r.count += 1;
}

struct Span {
  double start, end;  // microseconds
  const json* e;
  std::string thread;  // a CPU operator's process and thread
};

// The length of the union of the spans (sorted here), in microseconds.
double union_us(std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
  double total = 0, open = 0, close = -1;
  for (const Span& s : spans) {
    if (s.start > close) {
      if (close > open) total += close - open;
      open = s.start, close = s.end;
    } else {
      close = std::max(close, s.end);
    }
  }
  return close > open ? total + close - open : total;
}

// Each CPU operator's self time (its time less its children's on the same thread), by name.
std::map<std::string, ProfileRow> self_times(std::vector<Span> ops) {
  std::sort(ops.begin(), ops.end(), [](const Span& a, const Span& b) {  // by thread, start, longest first
    if (a.thread != b.thread) return a.thread < b.thread;
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  std::map<std::string, ProfileRow> out;
  std::vector<std::pair<Span, double>> open;  // the enclosing operators and their children's time
  const auto close = [&] {
    const auto& [s, children] = open.back();
    add(out, s.e->value("name", "?"), (s.end - s.start - children) / 1e3);
    open.pop_back();
  };
  for (const Span& s : ops) {
    if (!open.empty() && open.back().first.thread != s.thread)
      while (!open.empty()) close();
    while (!open.empty() && open.back().first.end <= s.start) close();
    if (!open.empty()) open.back().second += s.end - s.start;
    open.push_back({s, 0.0});
  }
  while (!open.empty()) close();
  return out;
}

}  // namespace

std::string kernel_kind(const std::string& category, const std::string& name) {
  std::string n = name;
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (category == "gpu_memcpy" || category == "gpu_memset" || n.rfind("memcpy", 0) == 0 || n.rfind("memset", 0) == 0)
    return "copy / cast / fill";
  // Attention first: flash and memory-efficient kernels carry "cutlass" in their names too.
  if (has_any(n, {"flash", "fmha", "sdpa", "attention", "attn", "cudnn"})) return "attention";
  if (has_any(n, {"gemm", "nvjet", "cutlass", "xmma", "wgmma", "cublas", "gemv", "s16816", "s1688", "splitkreduce"}))
    return "matmul";
  if (has_any(n, {"layer_norm", "layernorm", "gammabeta"})) return "layer norm";
  if (has_any(n, {"gelu"})) return "gelu";
  if (has_any(n, {"softmax", "xent", "cross_entropy", "nll_loss"})) return "softmax / cross-entropy";
  if (has_any(n, {"adam"})) return "optimizer";
  if (has_any(n, {"lpnorm", "normtwo", "norm_two"})) return "gradient norm";
  if (has_any(n, {"triton"})) return "fused (triton)";
  if (has_any(n, {"embedding", "index", "sort", "segment"})) return "embedding";
  if (has_any(n, {"reduce", "column_sums"})) return "reduction";
  if (has_any(n, {"copy", "cast", "fill", "zero"})) return "copy / cast / fill";
  if (has_any(n, {"elementwise", "vectorized", "unrolled", "pointwise", "foreach", "multi_tensor"})) return "elementwise";
  return "other";
}

ProfileSummary summarize_profile(const json& trace, const std::string& fallback_source) {
  ProfileSummary s;
  const json meta = trace.value("slm_profile", json::object());
  s.source = meta.value("source", fallback_source);
  s.steps = std::max<int64_t>(1, meta.value("steps", int64_t{1}));
  std::vector<Span> gpu, ops;
  double first = 0, last = 0;
  bool any = false;
  static const json none = json::array();
  const json& events = trace.contains("traceEvents") ? trace["traceEvents"] : none;  // the spans point into it
  for (const json& e : events) {
    if (!e.is_object() || e.value("ph", "") != "X" || !e.contains("ts") || !e["ts"].is_number()) continue;
    const double start = e["ts"].get<double>(), end = start + e.value("dur", 0.0);
    first = any ? std::min(first, start) : start, last = any ? std::max(last, end) : end, any = true;
    const std::string cat = e.value("cat", "");
    if (is_gpu(cat)) gpu.push_back({start, end, &e, ""});
    else if (cat == "cpu_op")
      ops.push_back({start, end, &e, e.value("pid", json()).dump() + "/" + e.value("tid", json()).dump()});
  }
  s.wall_ms = (last - first) / 1e3;
  s.gpu = !gpu.empty();
  if (!s.gpu) {
    s.kinds = largest_first(self_times(ops));
    return s;
  }
  s.gpu_busy_ms = union_us(gpu) / 1e3;
  std::map<std::string, ProfileRow> kinds, kernels;
  for (const Span& k : gpu) {
    const std::string name = k.e->value("name", "?"), cat = k.e->value("cat", "");
    add(kinds, kernel_kind(cat, name), (k.end - k.start) / 1e3);
    add(kernels, short_name(name), (k.end - k.start) / 1e3);
  }
  s.kinds = largest_first(kinds);
  s.top = largest_first(kernels);
  return s;
}

ProfileSummary read_profile(const std::string& path) {
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const std::exception& e) {
    throw UserError(fmt::format("{}: not a profiler trace ({})", path, e.what()));
  }
  if (!j.is_object() || !j.contains("traceEvents") || !j["traceEvents"].is_array())
    throw UserError(fmt::format("{}: not a profiler trace (no traceEvents)", path));
  return summarize_profile(j, fs::path(path).filename().string());
}

std::vector<std::string> profile_files(const std::string& run_dir) {
  std::vector<std::string> out;
  for (auto& [rank, path] : rank_files(run_dir, "profile")) out.push_back(std::move(path));
  return out;
}

namespace {

std::string totals(const ProfileSummary& s) {
  const double n = static_cast<double>(s.steps);
  std::string line = fmt::format("{}: {} step{}, {:.2f} ms per step", s.source, s.steps, s.steps == 1 ? "" : "s",
                                 s.wall_ms / n);
  if (!s.gpu) return line + " (no GPU kernels recorded: CPU operators' self time)";
  const double busy = s.wall_ms > 0 ? 100 * s.gpu_busy_ms / s.wall_ms : 0;
  return line + fmt::format(", GPU busy {:.2f} ms per step ({:.1f}%)", s.gpu_busy_ms / n, busy);
}

// Rows as a markdown table: at most `rows` of them, the rest summed in one.
std::string rows_table(const std::vector<ProfileRow>& all, const std::string& first_column, double whole_ms,
                       int64_t steps, size_t rows) {
  const double n = static_cast<double>(steps);
  std::string out = fmt::format("| {} | ms per step | share | {} per step |\n|---|---:|---:|---:|\n", first_column,
                                first_column.rfind("operator", 0) == 0 ? "calls" : "kernels");
  ProfileRow rest{"(the rest)"};
  for (size_t i = 0; i < all.size(); ++i) {
    if (i >= rows) {
      rest.ms += all[i].ms, rest.count += all[i].count;
      continue;
    }
    const ProfileRow& r = all[i];
    out += fmt::format("| {} | {:.3f} | {:.1f}% | {:.0f} |\n", r.name, r.ms / n, whole_ms > 0 ? 100 * r.ms / whole_ms : 0,
                       static_cast<double>(r.count) / n);
  }
  if (rest.count > 0)
    out += fmt::format("| {} | {:.3f} | {:.1f}% | {:.0f} |\n", rest.name, rest.ms / n,
                       whole_ms > 0 ? 100 * rest.ms / whole_ms : 0, static_cast<double>(rest.count) / n);
  return out;
}

}  // namespace

std::string profile_table(const ProfileSummary& s, size_t rows) {
  std::string out = totals(s) + "\n\n";
  if (!s.gpu) return out + rows_table(s.kinds, "operator (self time)", s.wall_ms, s.steps, rows);
  double kernels_ms = 0;
  for (const ProfileRow& r : s.kinds) kernels_ms += r.ms;
  out += rows_table(s.kinds, "GPU time by kind", kernels_ms, s.steps, rows);
  return out + "\n" + rows_table(s.top, "largest kernels", kernels_ms, s.steps, rows);
}

std::string profile_comparison(const std::vector<ProfileSummary>& profiles, size_t rows) {
  if (profiles.empty()) return "";
  const bool gpu = profiles[0].gpu;
  std::string out = fmt::format("| {} |", gpu ? "GPU time by kind, ms per step" : "operator (self time), ms per step");
  std::string rule = "|---|";
  for (const ProfileSummary& p : profiles) out += " " + p.source + " |", rule += "---:|";
  out += "\n" + rule + "\n";
  const auto line = [&](const std::string& name, const auto& ms_of) {
    out += "| " + name + " |";
    for (const ProfileSummary& p : profiles) out += fmt::format(" {:.3f} |", ms_of(p) / static_cast<double>(p.steps));
    out += "\n";
  };
  line("step (wall)", [](const ProfileSummary& p) { return p.wall_ms; });
  if (gpu) line("GPU busy", [](const ProfileSummary& p) { return p.gpu_busy_ms; });
  const auto ms_in = [](const ProfileSummary& p, const std::string& name) {
    for (const ProfileRow& r : p.kinds)
      if (r.name == name) return r.ms;
    return 0.0;
  };
  std::vector<std::string> names;  // the first profile's order, then the kinds only the others have
  for (const ProfileSummary& p : profiles)
    for (const ProfileRow& r : p.kinds)
      if (std::find(names.begin(), names.end(), r.name) == names.end()) names.push_back(r.name);
  for (size_t i = 0; i < std::min(rows, names.size()); ++i)
    line(names[i], [&](const ProfileSummary& p) { return ms_in(p, names[i]); });
  if (names.size() > rows)
    line("(the rest)", [&](const ProfileSummary& p) {
      double rest = 0;
      for (size_t i = rows; i < names.size(); ++i) rest += ms_in(p, names[i]);
      return rest;
    });
  return out;
}

std::string profile_line(const ProfileSummary& s) {
  double whole = s.gpu ? 0 : s.wall_ms;
  if (s.gpu)
    for (const ProfileRow& r : s.kinds) whole += r.ms;
  std::string parts;
  for (size_t i = 0; i < std::min<size_t>(3, s.kinds.size()); ++i)
    parts += fmt::format("{}{} {:.1f}%", i ? ", " : "", s.kinds[i].name, whole > 0 ? 100 * s.kinds[i].ms / whole : 0);
  return totals(s) + (parts.empty() ? "" : "; " + parts);
}

}  // namespace slm::report
