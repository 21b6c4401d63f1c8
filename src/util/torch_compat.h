// util/torch_compat.h: every LibTorch-version difference outside c10d in one place (c10d's are in
// comm/compat.h, which builds on this). 1.13 is Debian's build; 2.x is PyPI's.
//   autocast: 2.4 made the per-device calls take a DeviceType (1.13: is_cpu_enabled / is_enabled).
//   attention: 2.0 added scaled_dot_product_attention (flash / memory-efficient kernels).
//   autograd nodes: held by std::shared_ptr in 1.13, by c10::intrusive_ptr in 2.x.
//   fused AdamW: at::_fused_adamw_ (2.0 on CUDA, 2.4 on CPU too): one kernel for a whole update.
//   profiler events: KinetoEvent's times in microseconds (startUs, 1.13) or nanoseconds (startNs, 2.x).
//   logging: Debian's 1.13 logs through glog (GLOG_minloglevel quiets it); PyPI's 2.x through c10's
//   own logger, which a C++ program quiets by its flag (TORCH_CPP_LOG_LEVEL is read by Python only).
#pragma once
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <c10/util/Logging.h>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <torch/csrc/autograd/variable.h>
#include <torch/version.h>

#define SLM_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace slm::compat {

constexpr bool kHasSdpa = SLM_TORCH_AT_LEAST(2, 0);
constexpr bool kHasFusedAdam = SLM_TORCH_AT_LEAST(2, 4);  // see fused_adam

// What torch::autograd::impl::grad_accumulator returns (keeps a parameter's hooks alive).
using NodePtr = decltype(torch::autograd::impl::grad_accumulator(std::declval<at::Tensor>()));

inline bool autocast_enabled(at::DeviceType d) {
#if SLM_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(d);
#else
  return d == at::kCPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
#endif
}

inline void set_autocast_enabled(at::DeviceType d, bool on) {
#if SLM_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(d, on);
#else
  if (d == at::kCPU) at::autocast::set_cpu_enabled(on);
  else at::autocast::set_enabled(on);
#endif
}

inline void set_autocast_dtype(at::DeviceType d, at::ScalarType t) {
#if SLM_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_dtype(d, t);
#else
  if (d == at::kCPU) at::autocast::set_autocast_cpu_dtype(t);
  else at::autocast::set_autocast_gpu_dtype(t);
#endif
}

// The dtype autocast casts to on device type d (bf16 or fp16), whether or not it is enabled.
inline at::ScalarType autocast_dtype(at::DeviceType d) {
#if SLM_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(d);
#else
  return d == at::kCPU ? at::autocast::get_autocast_cpu_dtype() : at::autocast::get_autocast_gpu_dtype();
#endif
}

// One AdamW update of each tensor in p (gradients g, moments m, v; decoupled weight decay wd) as one
// fused kernel over the lists, its number (>= 1) in `step`, a 0-dim fp32 tensor on their device,
// and the learning rate `lr` a double or such a tensor (what a CUDA graph replays: the values are
// written into the tensors before each replay); where found_inf (a 0-dim float tensor on their
// device) is 1 the kernel leaves everything as it was. 2.4+ only (kHasFusedAdam).
template <typename Lr>
inline void fused_adamw(at::TensorList p, at::TensorList g, at::TensorList m, at::TensorList v, const at::Tensor& step,
                        const Lr& lr, double beta1, double beta2, double wd, double eps, const at::Tensor& found_inf) {
#if SLM_TORCH_AT_LEAST(2, 4)
  const std::vector<at::Tensor> per_tensor(p.size(), step);  // the kernel reads one step per tensor
  std::optional<at::Tensor> inf;
  if (found_inf.defined()) inf = found_inf;
  at::_fused_adamw_(p, g, m, v, {}, per_tensor, lr, beta1, beta2, wd, eps, false, false, std::nullopt, inf);
#else
  (void)p, (void)g, (void)m, (void)v, (void)step, (void)lr, (void)beta1, (void)beta2, (void)wd, (void)eps, (void)found_inf;
  throw std::logic_error("fused_adamw: LibTorch " TORCH_VERSION " has no fused AdamW");
#endif
}

// A profiler event's start and duration in microseconds (event_span_us).
template <typename Event, typename = void>
struct TimedInNs : std::false_type {};
template <typename Event>
struct TimedInNs<Event, std::void_t<decltype(std::declval<const Event&>().startNs())>> : std::true_type {};
template <typename Event>
std::pair<double, double> event_span_us(const Event& e) {
  if constexpr (TimedInNs<Event>::value)
    return {static_cast<double>(e.startNs()) / 1e3, static_cast<double>(e.durationNs()) / 1e3};
  else
    return {static_cast<double>(e.startUs()), static_cast<double>(e.durationUs())};
}

// c10d logs its own (multi-line) copy of errors slm reports in one line: keep only fatal ones,
// unless TORCH_CPP_LOG_LEVEL (INFO, WARNING, ERROR, FATAL) says otherwise.
inline void quiet_torch_logging() {
#ifndef C10_USE_GLOG
  const char* want = std::getenv("TORCH_CPP_LOG_LEVEL");
  const std::string w = want ? want : "FATAL";
  FLAGS_caffe2_log_level = w == "INFO" ? 0 : w == "WARNING" ? 1 : w == "ERROR" ? 2 : 3;
#endif
}

}  // namespace slm::compat
