// report/report.cpp: see report.h.
#include "report/report.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/error.h"
#include "util/files.h"
#include "util/stats.h"

namespace slm::report {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

struct Rows {
  std::map<int64_t, json> train, val;  // by step; the last record of a step wins
};

// The mixed datasets' validation losses in a validation record, in the record's key order.
std::vector<std::pair<std::string, double>> mix_val(const json& j) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [key, v] : j.items())
    if (key.rfind(kMixValKey, 0) == 0 && v.is_number()) out.emplace_back(key.substr(kMixValKey.size()), v);
  return out;
}

// Inside gnuplot's single quotes a quote is written twice.
std::string gnuplot_quoted(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out;
}

Rows read_rows(const std::string& run_dir) {
  const std::string path = run_dir + "/metrics.jsonl";
  if (!path_exists(path)) throw UserError(fmt::format("{}: not found; is {} a training run?", path, run_dir));
  std::istringstream in(read_file(path));
  Rows r;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty()) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::exception&) {  // a run killed mid-write leaves a partial last line
      std::fprintf(stderr, "warning: %s:%d: not valid JSON, skipped\n", path.c_str(), line_no);
      continue;
    }
    // Steps ("loss"), validations ("val_loss"); other records (loss scale, checkpoint times) are not rows.
    if (j.contains("val_loss")) r.val[j.value("step", int64_t{0})] = j;
    else if (j.contains("loss")) r.train[j.value("step", int64_t{0})] = j;
  }
  if (r.train.empty()) throw UserError(fmt::format("{}: no training steps recorded", path));
  return r;
}

}  // namespace

RunSummary summarize(const std::string& run_dir) {
  Rows r = read_rows(run_dir);
  RunSummary s;
  std::vector<double> losses, tps, tfl, mfu, step_s, wall;
  const json* prev = nullptr;
  for (const auto& [step, j] : r.train) {
    losses.push_back(j.value("loss", 0.0));
    tps.push_back(j.value("tokens_per_s", 0.0));
    tfl.push_back(j.value("tflops_per_device", 0.0));
    mfu.push_back(j.value("mfu", 0.0));
    s.tokens += j.value("tokens", int64_t{0});
    s.train_seconds += j.value("step_s", 0.0);
    step_s.push_back(j.value("step_s", 0.0));
    if (prev && prev->value("step", int64_t{0}) == step - 1 && j.contains("time") && prev->contains("time"))
      wall.push_back(j.value("time", 0.0) - prev->value("time", 0.0));
    prev = &j;
    s.peak_mem_bytes = std::max(s.peak_mem_bytes, j.value("peak_mem_bytes", int64_t{0}));
    if (j.value("tokens_per_usd", 0.0) > 0) s.cost_usd += j.value("tokens", 0.0) / j.value("tokens_per_usd", 0.0);
  }
  s.steps = r.train.rbegin()->first;
  size_t k = std::min<size_t>(10, losses.size());
  for (size_t i = 0; i < k; ++i) {
    s.first_loss += losses[i] / k;
    s.final_loss += losses[losses.size() - 1 - i] / k;
  }
  for (const auto& [step, j] : r.val) {
    double v = j.value("val_loss", 0.0);
    if (s.best_val_loss < 0 || v < s.best_val_loss) {
      s.best_val_loss = v;
      s.best_val_ppl = j.value("val_ppl", 0.0);
      s.best_val_step = step;
    }
  }
  if (!r.val.empty()) {
    s.last_val_step = r.val.rbegin()->first;
    s.last_mix_val = mix_val(r.val.rbegin()->second);
  }
  s.median_tokens_per_s = upper_median(tps);
  s.median_tflops = upper_median(tfl);
  s.median_mfu = upper_median(mfu);
  s.median_step_s = upper_median(step_s);
  s.median_wall_step_s = wall.empty() ? 0 : upper_median(wall);
  s.restarts = train::read_restart_events(run_dir);
  s.launcher_events = train::read_launcher_events(run_dir);
  return s;
}

std::string summary_table(const RunSummary& s) {
  std::string t = "| metric | value |\n|---|---|\n";
  t += fmt::format("| steps | {} |\n| tokens | {} |\n", s.steps, s.tokens);
  t += fmt::format("| train loss (first 10 / last 10 steps) | {:.4f} → {:.4f} |\n", s.first_loss, s.final_loss);
  if (s.best_val_step >= 0)
    t += fmt::format("| best validation loss (perplexity) | {:.4f} ({:.2f}) at step {} |\n", s.best_val_loss,
                     s.best_val_ppl, s.best_val_step);
  for (const auto& [name, loss] : s.last_mix_val)
    t += fmt::format("| validation loss of {} (data.mix) at step {} | {:.4f} |\n", name, s.last_val_step, loss);
  const std::string none = "not recorded";
  t += fmt::format("| median throughput | {:.0f} tokens/s, {:.3f} TFLOP/s per device |\n",
                   s.median_tokens_per_s, s.median_tflops);
  t += fmt::format("| median MFU | {} |\n", s.median_mfu > 0 ? fmt::format("{:.1f}%", 100 * s.median_mfu) : none);
  t += fmt::format("| training time (steps only) | {:.1f} s |\n", s.train_seconds);
  t += fmt::format("| time per step (median) | {:.3f} s in the step (step_s), {} from one step's end to the next |\n",
                   s.median_step_s, s.median_wall_step_s > 0 ? fmt::format("{:.3f} s", s.median_wall_step_s) : none);
  t += fmt::format("| cost | {} |\n", s.cost_usd > 0 ? fmt::format("${:.4f} ({:.3g} tokens per $)", s.cost_usd,
                                                                      s.tokens / s.cost_usd) : none);
  t += fmt::format("| peak memory | {} |\n", s.peak_mem_bytes > 0 ? fmt::format("{:.0f} MB", s.peak_mem_bytes / 1e6) : none);
  int64_t lost = 0;
  double down = 0;
  for (const auto& e : s.restarts) lost += e.steps_lost(), down += e.down_s;
  t += fmt::format("| restarts | {} |\n", s.restarts.empty() ? std::string("none")
                                                               : fmt::format("{} ({} finished steps lost, {:.1f} s down)",
                                                                             s.restarts.size(), lost, down));
  for (const auto& e : s.restarts) t += fmt::format("| | {} |\n", train::describe(e));
  for (const std::string& e : s.launcher_events) t += fmt::format("| | {} |\n", e);
  return t;
}

std::string write_report(const std::string& run_dir, std::string* no_plots) {
  Rows r = read_rows(run_dir);
  RunSummary s = summarize(run_dir);
  const std::string out = run_dir + "/report";
  fs::create_directories(out);
  std::string train_dat, val_dat;
  for (const auto& [step, j] : r.train)
    train_dat += fmt::format("{} {} {} {}\n", step, j.value("loss", 0.0), j.value("tokens_per_s", 0.0),
                             j.value("tflops_per_device", 0.0));
  for (const auto& [step, j] : r.val) {  // step, data.dir's loss, each mixed dataset's ('?' where not measured)
    val_dat += fmt::format("{} {}", step, j.value("val_loss", 0.0));
    for (const auto& [name, loss] : s.last_mix_val) {
      const std::string key = std::string(kMixValKey) + name;
      val_dat += j.contains(key) ? fmt::format(" {}", j[key].get<double>()) : " ?";
    }
    val_dat += "\n";
  }
  write_file_atomic(out + "/train.dat", train_dat);
  write_file_atomic(out + "/val.dat", val_dat.empty() ? "\n" : val_dat);
  std::string val_plot;
  if (!val_dat.empty()) val_plot = fmt::format(", '{}/val.dat' using 1:2 with linespoints title 'validation'", out);
  for (size_t i = 0; i < s.last_mix_val.size(); ++i)
    val_plot += fmt::format(", '' using 1:{} with linespoints title '{}' noenhanced", i + 3,
                            gnuplot_quoted(s.last_mix_val[i].first));
  std::string plots;
  for (const char* term : {"svg size 800,500", "pngcairo size 800,500"}) {
    std::string ext = std::string(term).rfind("svg", 0) == 0 ? "svg" : "png";
    plots += fmt::format(
        "set terminal {}\nset grid\nset datafile missing '?'\nset xlabel 'step'\n"
        "set output '{}/loss.{}'\nset ylabel 'loss'\nset title 'loss'\n"
        "plot '{}/train.dat' using 1:2 with lines title 'train'{}\n"
        "set output '{}/throughput.{}'\nset ylabel 'tokens/s'\nset y2label 'TFLOP/s per device'\n"
        "set y2tics\nset title 'throughput'\n"
        "plot '{}/train.dat' using 1:3 with lines title 'tokens/s', '' using 1:4 axes x1y2 with lines "
        "title 'TFLOP/s'\nunset y2tics\nunset y2label\n",
        term, out, ext, out, val_plot, out, ext, out);
  }
  write_file_atomic(out + "/plots.gp", plots);
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    const std::string why = "gnuplot not found: install gnuplot-nox (scripts/setup.sh does)";
    if (!no_plots) throw UserError(why);
    *no_plots = why;
    write_file_atomic(out + "/summary.md", "# Run " + run_dir + "\n\n" + summary_table(s));
    return out;
  }
  if (std::system(fmt::format("gnuplot '{}/plots.gp' 2>'{}/gnuplot.log'", out, out).c_str()) != 0)
    throw UserError(fmt::format("gnuplot failed; see {}/gnuplot.log", out));
  write_file_atomic(out + "/summary.md", "# Run " + run_dir + "\n\n" + summary_table(s) +
                                             "\n![loss](loss.svg)\n![throughput](throughput.svg)\n");
  return out;
}

}  // namespace slm::report
