// cli/doctor_cmd.cpp: `slm doctor`: what this machine can do, before a user trains on it. One line
// per check with a verdict (ok, info, warn, fail) and, where something is missing, the command that
// fixes it. It measures instead of guessing (the GEMM peaks and the precision probe that `slm train`
// uses, cached in ~/.cache/slmtrain/), and reads the same facts as `slm train`'s header
// (host/machine.h). Exit 1 when a check fails.
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "host/device.h"
#include "host/hardware.h"
#include "host/machine.h"
#include "host/runtime.h"
#include "model/cpu_rows.h"
#include "model/kernel_threads.h"
#include "testbed/netns.h"
#include "train/precision.h"
#include "util/cache_dir.h"
#include "util/files.h"

namespace slm::cli {
namespace {

struct Check {
  std::string name, verdict, detail, fix;  // verdict: ok | info | warn | fail
};

bool have_program(const std::string& name) {
  return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0;
}

double free_bytes(const std::string& dir) {
  struct statvfs v {};
  return ::statvfs(dir.c_str(), &v) == 0 ? static_cast<double>(v.f_bavail) * static_cast<double>(v.f_frsize) : -1;
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The BLAS that takes LibTorch's fp32 products on the CPU (host/blas_info.h).
Check blas_check(const host::BlasInfo& b) {
  const host::BlasWarning w = host::blas_warning(b);
  if (!w.problem.empty()) return {"blas", "warn", w.problem, w.fix};
  return {"blas", "ok", b.kind + " takes fp32 matrix products (" + b.file + ")", ""};
}

std::vector<Check> hardware_checks(const host::MachineFacts& m) {
  std::vector<Check> c;
  const std::string build = m.torch_cuda ? (m.torch_nccl ? "with CUDA and NCCL" : "with CUDA") : "CPU-only";
  c.push_back({"slm", "ok", fmt::format("LibTorch {} ({})", m.torch_version, build), ""});
  c.push_back(blas_check(m.blas));
  const bool avx2 = std::find(m.cpu_features.begin(), m.cpu_features.end(), "avx2") != m.cpu_features.end();
  c.push_back({"cpu", avx2 ? "ok" : "warn",
               host::describe_cpu(m) + "; slm train uses all of them, slm launch -n N shares them" +
                   (avx2 ? "" : "; without AVX2 training is slow"),
               ""});
  const double avail = m.memory_available_bytes / kGiB;
  c.push_back({"memory", avail >= 2 ? "ok" : "warn",
               fmt::format("{:.1f} GiB, {:.1f} GiB available{}", m.memory_bytes / kGiB, avail,
                           avail >= 2 ? "" : ": only the tiny preset will fit"),
               ""});
  if (m.gpus > 0) {
    c.push_back({"gpu", "ok",
                 fmt::format("{} x {} (compute capability {}.{}, {:.0f} GiB)", m.gpus, m.gpu.name, m.gpu.major,
                             m.gpu.minor, m.gpu.memory_bytes / kGiB),
                 ""});
  } else if (m.gpu.ok) {
    c.push_back({"gpu", "warn", fmt::format("the driver sees {} but this LibTorch is CPU-only", m.gpu.name),
                 "SLM_TORCH=pip bash scripts/setup.sh --build"});
  } else {
    c.push_back({"gpu", "info", "none visible: training runs on the CPU", ""});
  }
  c.push_back({"multi-gpu", m.torch_nccl ? "ok" : "info",
               m.torch_nccl ? "NCCL compiled in (one rank per GPU)"
                            : "no NCCL in this LibTorch: CPU ranks use Gloo; for several GPUs build with PyPI's torch",
               m.torch_nccl ? "" : "SLM_TORCH=pip bash scripts/setup.sh --build"});
  return c;
}

// The GEMM peaks (MFU's denominator: measured again, the higher of that and the cached one kept) and
// the precision `auto` picks for the configuration's step.
std::vector<Check> speed_checks(const train::Config& cfg) {
  std::vector<Check> c;
  const std::string device = host::resolve_device(cfg.system.device, cfg.dist.backend);
  host::configure_cpu_threads(cfg.system.threads, 1);
  c.push_back({"runtime", "ok", host::runtime_settings() + " (as `slm train` runs; set one to override it)", ""});
  const int kernel = model::kernel_threads(), threads = host::cpu_threads();
  if (model::cpu_rows_isa() == model::CpuRows::kNone)
    c.push_back({"kernels", "info", "no AVX2 or AVX-512 on this CPU: ATen's operators run in place of slm's own", ""});
  else
    c.push_back(kernel == threads ? Check{"kernels", "ok",
                                          fmt::format("slm's own CPU kernels, {}, run on all {} threads",
                                                      model::cpu_rows_describe(), threads),
                                          ""}
                                  : Check{"kernels", "warn",
                                          fmt::format("slm's own CPU kernels, {}, run on {} of {} threads: built "
                                                      "without OpenMP",
                                                      model::cpu_rows_describe(), kernel, threads),
                                          "rebuild with scripts/setup.sh --build"});
  for (const char* p : {"fp32", "bf16"}) {
    const host::DeviceInfo d = host::describe_device(device, p, host::cpu_threads(), 0, 0, host::PeakCache::kRefresh);
    c.push_back({std::string(p) + " peak", "ok",
                 fmt::format("{:.3f} TFLOP/s on {} (matmul, {})", d.peak_flops / 1e12, d.name, d.peak_source), ""});
  }
  const int64_t T = cfg.batch.seq_len > 0 ? cfg.batch.seq_len : cfg.model.block_size;
  std::string why;
  const std::string chosen = train::resolve_precision("auto", device, {cfg.model, cfg.batch.micro_batch, T}, &why);
  if (why.rfind("auto: ", 0) == 0) why = why.substr(6);
  c.push_back({"precision", "ok",
               fmt::format("auto picks {} for a {}-layer, {}-wide model: {}", chosen, cfg.model.n_layer,
                           cfg.model.n_embd, why),
               ""});
  return c;
}

std::vector<Check> tool_checks() {
  std::vector<Check> c;
  const testbed::Readiness t = testbed::testbed_readiness(delayer_path());
  c.push_back({"testbed", t.ok ? "ok" : "warn", t.ok ? "slm testbed can run: " + t.detail : t.detail, t.fix});
  c.push_back(have_program("gnuplot")
                  ? Check{"report plots", "ok", "gnuplot found (slm report draws loss and throughput)", ""}
                  : Check{"report plots", "warn", "gnuplot missing: slm report writes tables only",
                          "sudo apt-get install gnuplot-nox"});
  const std::string cache = cache_dir();
  std::error_code ec;
  std::filesystem::create_directories(cache, ec);
  c.push_back(::access(cache.c_str(), W_OK) == 0
                  ? Check{"cache", "ok", cache + " (measurements are kept here, per CPU, thread count and build)", ""}
                  : Check{"cache", "warn", cache + " is not writable: every run measures again",
                          "set HOME to a writable folder"});
  const double disk = free_bytes(".") / kGiB;
  c.push_back({"disk", disk >= 5 ? "ok" : disk >= 1 ? "warn" : "fail",
               fmt::format("{:.1f} GiB free here (run folders, checkpoints)", disk),
               disk >= 5 ? "" : "free some space, or train with run.dir on another disk"});
  return c;
}

void print(const std::vector<Check>& checks, bool json) {
  if (json) {
    nlohmann::json j = nlohmann::json::array();
    for (const Check& c : checks) j.push_back({{"check", c.name}, {"verdict", c.verdict}, {"detail", c.detail}, {"fix", c.fix}});
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  for (const Check& c : checks)
    std::printf("%-5s %-13s %s%s\n", c.verdict.c_str(), c.name.c_str(), c.detail.c_str(),
                c.fix.empty() ? "" : fmt::format(" -> fix: {}", c.fix).c_str());
}

}  // namespace

void add_doctor_command(CLI::App& app) {
  struct Args {
    std::string config;
    std::vector<std::string> set;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("doctor", "check what this machine can do: CPU, memory, measured speed, "
                                           "precision, GPUs, testbed");
  cmd->add_option("-c,--config", a->config, "the precision check uses this configuration's model and batch "
                                           "(default: the built-in tiny shape)");
  cmd->add_option("--set", a->set, "override one key, section.key=value (repeatable)");
  cmd->add_flag("--json", a->json, "one JSON array of {check, verdict, detail, fix}");
  cmd->callback([a] {
    const train::Config cfg = model_config(a->config, a->set);
    const host::MachineFacts m = host::machine_facts();
    if (!a->json) std::printf("slm doctor: %s\n", host::describe_machine(m).c_str());
    std::vector<Check> checks = hardware_checks(m);
    for (Check& c : speed_checks(cfg)) checks.push_back(std::move(c));
    for (Check& c : tool_checks()) checks.push_back(std::move(c));
    print(checks, a->json);
    int failed = 0, warned = 0;
    for (const Check& c : checks) failed += c.verdict == "fail", warned += c.verdict == "warn";
    if (!a->json)
      std::printf("%zu checks: %d to look at, %d failed\n", checks.size(), warned, failed);
    if (failed > 0) throw CLI::RuntimeError(1);
  });
}

}  // namespace slm::cli
