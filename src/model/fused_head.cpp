// model/fused_head.cpp: see fused_head.h.
#include "model/fused_head.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>

#include "model/autocast.h"
#include "model/recompute.h"
#include "model/xent_rows.h"

namespace slm::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Rows per chunk: all of them up to 2^28 logits (512 MiB in bf16). Each chunk adds its dW to the
// running sum, a pass over the (V, C) gradient, so chunks stay large.
int64_t chunk_rows(int64_t N, int64_t V, int64_t asked) {
  if (asked > 0) return std::min(asked, N);
  return std::clamp<int64_t>((int64_t{1} << 28) / V, 1, std::max<int64_t>(N, 1));
}

// out = a b, or out += a b: straight into out (a gradient's rows) where it has the product's dtype,
// else cast there (fp32 master weights under autocast).
void mm_into(at::Tensor out, const at::Tensor& a, const at::Tensor& b, bool accumulate) {
  if (out.scalar_type() != a.scalar_type()) {
    const at::Tensor p = at::mm(a, b);
    accumulate ? out.add_(p) : out.copy_(p);
  } else if (accumulate) {
    out.addmm_(a, b);
  } else {
    at::mm_out(out, a, b);
  }
}

// Sum over the rows of -log softmax(x w_v^T)[target]; with dx/dw defined, also the unscaled
// gradients of that sum (dx = G w_v, dw[0:V] = G^T x with G = softmax - onehot).
// The logits have `width` columns (V, or w's padded rows): columns from V on are -inf, so their
// softmax and gradient are exactly 0.
at::Tensor chunked_loss(const at::Tensor& x, const at::Tensor& w, int64_t V, int64_t width, const at::Tensor& targets,
                        int64_t rows, at::ScalarType cdt, at::Tensor* dx, at::Tensor* dw) {
  const int64_t N = x.size(0);
  const at::Tensor wv = w.narrow(0, 0, width).to(cdt);  // (width, C)
  const at::Tensor wv_t = wv.t();
  at::Tensor dwv = dw ? dw->narrow(0, 0, width) : at::Tensor();
  const at::ScalarType acc = x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;  // softmax's dtype
  at::Tensor total = at::zeros({}, x.options().dtype(acc));
  for (int64_t r = 0; r < N; r += rows) {
    const int64_t n = std::min(rows, N - r);
    const at::Tensor xc = x.narrow(0, r, n).to(cdt);
    const at::Tensor t = targets.narrow(0, r, n).unsqueeze(1);
    at::Tensor gc = at::mm(xc, wv_t);  // (n, width) logits, then their gradient
    if (xent_rows_supported(gc, V)) {  // AVX-512 rows on the CPU, a CUDA kernel on a GPU
      total += xent_rows(gc, t.squeeze(1), dx != nullptr, V).sum();
      if (!dx) continue;
    } else {
      if (width > V) gc.narrow(1, V, width - V).fill_(-std::numeric_limits<double>::infinity());
      const at::Tensor logp = at::log_softmax(gc, 1, acc);  // from 16-bit logits in one pass on GPUs
      const at::Tensor logp_t = logp.gather(1, t);
      total -= logp_t.sum();
      if (!dx) continue;
      // softmax - onehot into the logits' own storage: the softmax rounded once to the compute dtype
      // in one pass (not exp in fp32, then a cast), the target entries p - 1 from fp32 as linear +
      // cross_entropy's gradient has them. Head on an H100 (gpt2, micro-batch 16): docs/benchmarks.md.
      at::exp_out(gc, logp);
      gc.scatter_(1, t, logp_t.exp().sub_(1).to(cdt));
    }
    mm_into(dx->narrow(0, r, n), gc, wv, false);
    mm_into(dwv, gc.t(), xc, r > 0);
  }
  return total;
}

struct FusedLinearCE : torch::autograd::Function<FusedLinearCE> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w, int64_t V,
                            int64_t width, const at::Tensor& targets, int64_t rows) {
    const at::ScalarType cdt = compute_dtype(x);
    AutocastOff no_autocast;  // the dtypes here are chosen explicitly
    at::Tensor dx = at::empty_like(x), dw = at::empty_like(w);  // the first chunk writes dw's `width` rows
    if (x.size(0) == 0) dw.zero_();
    else if (w.size(0) > width) dw.narrow(0, width, w.size(0) - width).zero_();  // padding rows: no gradient
    const at::Tensor total = chunked_loss(x, w, V, width, targets, rows, cdt, &dx, &dw);
    const double N = static_cast<double>(std::max<int64_t>(x.size(0), 1));
    ctx->save_for_backward({dx, dw});
    ctx->saved_data["n"] = N;
    return total / N;
  }

  static variable_list backward(AutogradContext* ctx, variable_list g) {
    // Scaled in place: the saved gradients are this node's alone and released after it, so the
    // (V, C) weight gradient is not held twice at the backward's peak.
    variable_list s = ctx->get_saved_variables();
    const at::Tensor scale = g[0] / ctx->saved_data["n"].toDouble();
    s[0].mul_(scale.to(s[0].scalar_type()));
    s[1].mul_(scale.to(s[1].scalar_type()));
    return {s[0], s[1], at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor fused_linear_cross_entropy(const at::Tensor& x, const at::Tensor& w, int64_t V, const at::Tensor& targets,
                                      int64_t rows_per_chunk, int64_t width) {
  TORCH_CHECK(x.dim() == 2 && w.dim() == 2 && x.size(1) == w.size(1) && V >= 1 && V <= w.size(0),
              "fused_linear_cross_entropy: shapes x ", x.sizes(), " w ", w.sizes(), " V ", V);
  // A GPU's GEMMs want the padded width (an odd row length like GPT-2's 50257 takes cuBLAS off its
  // fast kernels: the head ran 2.8x slower on an H200); the CPU's one-pass rows want V.
  if (width == 0) width = x.is_cpu() ? V : w.size(0);
  TORCH_CHECK(width >= V && width <= w.size(0), "fused_linear_cross_entropy: width ", width, " outside [", V, ", ",
              w.size(0), "]");
  const int64_t rows = chunk_rows(x.size(0), width, rows_per_chunk);
  if (at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad()))
    return FusedLinearCE::apply(x, w, V, width, targets, rows);
  const at::ScalarType cdt = compute_dtype(x);
  AutocastOff no_autocast;  // the dtypes here are chosen explicitly
  const at::Tensor total = chunked_loss(x, w, V, width, targets, rows, cdt, nullptr, nullptr);
  return total / static_cast<double>(std::max<int64_t>(x.size(0), 1));
}

}  // namespace slm::model
