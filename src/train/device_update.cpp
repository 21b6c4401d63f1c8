// train/device_update.cpp: see device_update.h.
#include "train/device_update.h"

#include <torch/torch.h>

#include <fmt/format.h>
#include <limits>

#include "util/error.h"
#include "util/torch_compat.h"

namespace slm::train {

bool device_update_applies(const std::string& setting, const std::string& device, const std::string& optimizer,
                           std::string* why) {
  if (setting == "off") return false;
  if (setting == "auto" && device == "cpu") return false;  // a host sync costs nothing there
  std::string no;
  if (optimizer != "adamw") no = fmt::format("optim.name = \"{}\" (it needs AdamW)", optimizer);
  else if (!compat::kHasFusedAdam) no = "LibTorch " TORCH_VERSION " has no fused AdamW (2.4+)";
  if (no.empty()) return true;
  if (setting == "on") throw UserError("system: device_update = \"on\" is not possible here: " + no);
  if (why) *why = no;
  return false;
}

UpdateScalars make_update_scalars(const at::Tensor& like) {
  const auto opts = like.options().dtype(at::kFloat);
  return {at::zeros({}, opts), at::zeros({}, opts), at::ones({}, opts), at::ones({}, opts)};
}

namespace {
// x rounded to fp32, saturating to ±inf (fill_ refuses a finite double beyond fp32's range, such as
// a loss scale of 1e39, where multiplying by the double gives inf).
float to_fp32(double x) {
  const double most = std::numeric_limits<float>::max();
  if (x > most) return std::numeric_limits<float>::infinity();
  if (x < -most) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(x);
}
}  // namespace

void set_update_scalars(UpdateScalars& s, double lr, int64_t step, double loss_factor, double unscale) {
  s.lr.fill_(lr);
  s.step.fill_(static_cast<double>(step));
  s.loss_factor.fill_(to_fp32(loss_factor));
  s.unscale.fill_(to_fp32(unscale));
}

namespace {
// Clips grad in place (see clip_and_update); returns the skip flag.
at::Tensor clip(at::Tensor& grad, const at::Tensor& norm_sq, const OptimConfig& o) {
  const at::Tensor norm = norm_sq.reshape({}).sqrt();
  const at::Tensor found_inf = norm.isfinite().logical_not().to(at::kFloat);
  if (clips_float_norm(o.grad_clip)) {
    // Where the norm is not finite the update is skipped whatever the factor; above the limit the
    // factor is the host path's double, rounded once to the gradients' dtype by mul_.
    const at::Tensor factor = at::where(norm > o.grad_clip, o.grad_clip / (norm + 1e-6), at::ones_like(norm));
    grad.mul_(factor);
  }
  return found_inf;
}
}  // namespace

at::Tensor clip_and_update(AdamW& a, at::Tensor param, at::Tensor grad, const at::Tensor& norm_sq,
                           const OptimConfig& o, double lr) {
  torch::NoGradGuard no_grad;
  const at::Tensor found_inf = clip(grad, norm_sq, o);
  adamw_step(a, param, grad, o, lr, AdamKernel::libtorch_fused, found_inf);
  return found_inf;
}

at::Tensor clip_and_update(AdamW& a, at::Tensor param, at::Tensor grad, const at::Tensor& norm_sq,
                           const OptimConfig& o, const UpdateScalars& s) {
  torch::NoGradGuard no_grad;
  const at::Tensor found_inf = clip(grad, norm_sq, o);
  adamw_step_by_tensors(a, param, grad, o, s.lr, s.step, found_inf);
  return found_inf;
}

std::pair<double, double> read_back(const at::Tensor& loss, const at::Tensor& norm_sq) {
  const at::Tensor l = loss.defined() ? loss.reshape({1}).to(at::kDouble) : at::zeros({1}, norm_sq.options().dtype(at::kDouble));
  const at::Tensor both = at::cat({l, norm_sq.reshape({1}).to(at::kDouble)}).cpu();
  return {both[0].item<double>(), both[1].item<double>()};
}

}  // namespace slm::train
