// model/cuda/ops.cpp: see ops.h.
#include "model/cuda/ops.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>

#include "model/cuda/kernels.h"

namespace slm::model::cuda {
namespace {

DType dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kBFloat16: return DType::kBFloat16;
    case at::kHalf: return DType::kHalf;
    default: return DType::kFloat;
  }
}

// The tensor's device's current stream. Each op below first makes the tensor's device the current
// one (as ATen's CUDA ops do): the launch, and the SM count the grids are sized by, are that device's.
void* stream_of(const at::Tensor& t) { return c10::cuda::getCurrentCUDAStream(t.device().index()).stream(); }

// Row groups of the bias + GELU kernels: about 32 blocks per SM over the column tiles of 256, so
// several waves (5-8 blocks fit an SM, by the kernel's registers) and a small idle share in the
// last one; at most one group per row.
int64_t row_groups(int64_t rows, int64_t N) {
  const int64_t sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
  const int64_t tiles = std::max<int64_t>(1, (N + 255) / 256);
  return std::clamp<int64_t>(32 * sms / tiles, 1, std::clamp<int64_t>(rows, 1, 65535));
}

}  // namespace

bool kernels_take(const at::Tensor& t) {
  return t.is_cuda() && t.is_contiguous() &&
         (t.scalar_type() == at::kFloat || t.scalar_type() == at::kBFloat16 || t.scalar_type() == at::kHalf);
}

at::Tensor xent_rows(at::Tensor& logits, const at::Tensor& targets, int64_t V, bool grad) {
  TORCH_CHECK(kernels_take(logits) && logits.dim() == 2 && V >= 1 && V <= logits.size(1),
              "cuda::xent_rows: needs a contiguous float/bf16/fp16 CUDA matrix with at least V = ", V, " columns");
  const c10::cuda::CUDAGuard on(logits.device());
  const int64_t rows = logits.size(0);
  const at::Tensor t = targets.to(logits.device(), at::kLong).contiguous();
  TORCH_CHECK(t.numel() == rows, "cuda::xent_rows: ", t.numel(), " targets for ", rows, " rows");
  at::Tensor loss = at::empty({rows}, logits.options().dtype(at::kFloat));
  const int err = xent_rows(logits.data_ptr(), loss.data_ptr<float>(), t.data_ptr<int64_t>(), rows, logits.size(1), V,
                            grad, dtype_of(logits), stream_of(logits));
  TORCH_CHECK(err == 0, "cuda::xent_rows: CUDA error ", err);
  return loss;
}

std::vector<at::Tensor> add_layer_norm_forward(const at::Tensor& r, const at::Tensor& d, const at::Tensor& w,
                                               const at::Tensor& b, double eps, at::ScalarType y_type) {
  TORCH_CHECK(kernels_take(r) && kernels_take(d) && r.sizes() == d.sizes() && r.dim() >= 1,
              "cuda::add_layer_norm: needs contiguous float/bf16/fp16 CUDA tensors of one shape");
  const c10::cuda::CUDAGuard on(r.device());
  const int64_t C = r.size(-1), rows = r.numel() / std::max<int64_t>(C, 1);
  TORCH_CHECK(w.is_cuda() && b.is_cuda() && w.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat &&
                  w.numel() == C && b.numel() == C && w.is_contiguous() && b.is_contiguous(),
              "cuda::add_layer_norm: w and b must be contiguous fp32 CUDA vectors of ", C);
  at::Tensor s = at::empty_like(r), y = at::empty_like(r, r.options().dtype(y_type));
  at::Tensor mean = at::empty({rows}, r.options().dtype(at::kFloat)), rstd = at::empty_like(mean);
  AddLayerNorm a;
  a.r = r.data_ptr(), a.d = d.data_ptr(), a.s = s.data_ptr(), a.y = y.data_ptr();
  a.s_type = dtype_of(r), a.d_type = dtype_of(d), a.y_type = dtype_of(y);
  a.w = w.data_ptr<float>(), a.b = b.data_ptr<float>(), a.mean = mean.data_ptr<float>(), a.rstd = rstd.data_ptr<float>();
  a.rows = rows, a.C = C, a.eps = static_cast<float>(eps);
  const int err = cuda::add_layer_norm_forward(a, stream_of(r));
  TORCH_CHECK(err == 0, "cuda::add_layer_norm_forward: CUDA error ", err);
  return {s, y, mean, rstd};
}

std::vector<at::Tensor> add_layer_norm_backward(const at::Tensor& gy_in, const at::Tensor& gs_in, const at::Tensor& s,
                                                const at::Tensor& mean, const at::Tensor& rstd, const at::Tensor& w,
                                                at::ScalarType d_type) {
  const at::Tensor gy = gy_in.contiguous();
  const at::Tensor gs = gs_in.defined() ? gs_in.to(s.scalar_type()).contiguous() : at::Tensor();
  TORCH_CHECK(kernels_take(s) && kernels_take(gy) && gy.sizes() == s.sizes() && (!gs.defined() || gs.sizes() == s.sizes()),
              "cuda::add_layer_norm_backward: needs contiguous CUDA gradients shaped like the sum");
  const c10::cuda::CUDAGuard on(s.device());
  const int64_t C = s.size(-1), rows = s.numel() / std::max<int64_t>(C, 1);
  TORCH_CHECK(C >= 1 && C <= kAddLayerNormMaxC, "cuda::add_layer_norm_backward: rows of ", C, " (1 to ",
              kAddLayerNormMaxC, ")");
  // Enough warps to fill the GPU (two blocks of 8 per SM), at most one per row.
  const int64_t sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount, per = kAddLayerNormWarpsPerBlock;
  const int64_t warps = std::max<int64_t>(1, std::min((rows + per - 1) / per, 2 * sms)) * per;
  at::Tensor gx = at::empty_like(s), partial = at::empty({warps, 2, C}, s.options().dtype(at::kFloat));
  at::Tensor dwdb = at::empty({2, C}, partial.options());
  const bool gd_by_kernel = d_type != s.scalar_type() && d_type == gy.scalar_type();
  at::Tensor gd = gd_by_kernel ? at::empty_like(gy) : at::Tensor();
  AddLayerNormGrad g;
  g.gy = gy.data_ptr(), g.gs = gs.defined() ? gs.data_ptr() : nullptr, g.s = s.data_ptr();
  g.s_type = dtype_of(s), g.y_type = dtype_of(gy);
  g.mean = mean.data_ptr<float>(), g.rstd = rstd.data_ptr<float>(), g.w = w.data_ptr<float>();
  g.gx = gx.data_ptr(), g.gd = gd_by_kernel ? gd.data_ptr() : nullptr;
  g.dwdb = dwdb.data_ptr<float>(), g.partial = partial.data_ptr<float>();
  g.rows = rows, g.C = C, g.warps = warps;
  const int err = cuda::add_layer_norm_backward(g, stream_of(s));
  TORCH_CHECK(err == 0, "cuda::add_layer_norm_backward: CUDA error ", err);
  return {gx, dwdb[0], dwdb[1], gd_by_kernel ? gd : gx.to(d_type)};
}

at::Tensor bias_gelu_forward(const at::Tensor& x, const at::Tensor& b) {
  TORCH_CHECK(kernels_take(x) && x.dim() >= 1 && b.is_cuda() && b.scalar_type() == at::kFloat && b.is_contiguous() &&
                  b.numel() == x.size(-1),
              "cuda::bias_gelu: needs a contiguous float/bf16/fp16 CUDA tensor and an fp32 CUDA bias of its last size");
  const c10::cuda::CUDAGuard on(x.device());
  at::Tensor y = at::empty_like(x);
  BiasGelu a;
  a.x = x.data_ptr(), a.b = b.data_ptr<float>(), a.y = y.data_ptr(), a.type = dtype_of(x);
  a.N = x.size(-1), a.rows = a.N == 0 ? 0 : x.numel() / a.N, a.groups = row_groups(a.rows, a.N);
  const int err = cuda::bias_gelu_forward(a, stream_of(x));
  TORCH_CHECK(err == 0, "cuda::bias_gelu_forward: CUDA error ", err);
  return y;
}

std::vector<at::Tensor> bias_gelu_backward(const at::Tensor& gy_in, const at::Tensor& x, const at::Tensor& b) {
  const at::Tensor gy = gy_in.to(x.scalar_type()).contiguous();
  TORCH_CHECK(kernels_take(x) && gy.sizes() == x.sizes(), "cuda::bias_gelu_backward: needs gy shaped like x");
  const c10::cuda::CUDAGuard on(x.device());
  const int64_t N = x.size(-1), rows = N == 0 ? 0 : x.numel() / N, groups = row_groups(rows, N);
  at::Tensor gx = at::empty_like(x), partial = at::empty({groups, N}, x.options().dtype(at::kFloat));
  at::Tensor db = at::empty({N}, partial.options());
  BiasGeluGrad g;
  g.gy = gy.data_ptr(), g.x = x.data_ptr(), g.b = b.data_ptr<float>(), g.gx = gx.data_ptr();
  g.db = db.data_ptr<float>(), g.partial = partial.data_ptr<float>(), g.type = dtype_of(x);
  g.rows = rows, g.N = N, g.groups = groups;
  if (rows == 0 || N == 0) return {gx, db.zero_()};
  const int err = cuda::bias_gelu_backward(g, stream_of(x));
  TORCH_CHECK(err == 0, "cuda::bias_gelu_backward: CUDA error ", err);
  return {gx, db};
}

}  // namespace slm::model::cuda
