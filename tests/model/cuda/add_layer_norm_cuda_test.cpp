// tests/model/cuda/add_layer_norm_cuda_test.cpp: the residual add + LayerNorm kernels
// (model/cuda/add_layer_norm.cu) against the ATen composition they replace (add, then layer_norm,
// in double through autograd): the sum, the normalised rows, the gradients of both inputs, of w
// and of b, with and without a gradient of the sum, in fp32, bf16 and fp16 and the mixed case of
// bf16 autocast (fp32 residual, bf16 delta, bf16 output), row lengths 1, 37, 256, 257, 768, 1000, 1600 and
// 2048 (the backward's register buckets and their edges), 4,099 rows (more warps' partial sums than one thread adds);
// the weight gradients the same bits on a second run; and add_layer_norm() under autocast.
// Runs wherever a GPU is; skipped elsewhere (and in a build without the own CUDA kernels). The CPU
// kernels: tests/model/add_layer_norm_rows_test.cpp.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/add_layer_norm.h"
#include "model/add_layer_norm_check.h"
#include "model/cuda/cuda_test_util.h"
#include "util/torch_compat.h"
#ifdef SLM_HAVE_CUDA_KERNELS
#include "model/cuda/kernels.h"
#include "model/cuda/ops.h"
#endif

namespace slm::model {
namespace {

struct Case {
  int64_t rows, C;
  at::ScalarType r, d, y;
  double tol;  // on y and the gradients, relative to their largest value
};

TEST(CudaAddLayerNorm, MatchesAddThenLayerNorm) {
  if (!test::have_cuda_kernels()) GTEST_SKIP() << "no GPU, or a build without the own CUDA kernels";
#ifdef SLM_HAVE_CUDA_KERNELS
  torch::manual_seed(21);
  const auto dev = torch::Device(torch::kCUDA);
  for (const Case& c : {Case{1, 1, at::kFloat, at::kFloat, at::kFloat, 1e-5}, Case{7, 37, at::kFloat, at::kFloat, at::kFloat, 1e-5},
                        Case{33, 768, at::kFloat, at::kBFloat16, at::kBFloat16, 1e-2},
                        Case{9, 1000, at::kHalf, at::kHalf, at::kHalf, 2e-3},
                        Case{5, 1600, at::kBFloat16, at::kBFloat16, at::kBFloat16, 2e-2},
                        Case{300, 768, at::kFloat, at::kFloat, at::kFloat, 1e-5},
                        Case{6, 256, at::kFloat, at::kFloat, at::kFloat, 1e-5}, Case{6, 257, at::kFloat, at::kFloat, at::kFloat, 1e-5},
                        Case{4, 2048, at::kFloat, at::kFloat, at::kFloat, 1e-5},
                        Case{4099, 768, at::kFloat, at::kBFloat16, at::kBFloat16, 1e-2}}) {
    const auto opt = torch::TensorOptions().device(dev);
    const at::Tensor r = (torch::randn({c.rows, c.C}, opt) * 3 + 1).to(c.r), d = torch::randn({c.rows, c.C}, opt).to(c.d);
    const at::Tensor w = torch::randn({c.C}, opt) + 1, b = torch::randn({c.C}, opt);
    const std::vector<at::Tensor> f = cuda::add_layer_norm_forward(r, d, w, b, 1e-5, c.y);
    EXPECT_TRUE(at::equal(f[0], r + d)) << "the sum is ATen's add, rounded alike (C = " << c.C << ")";
    EXPECT_EQ(f[1].scalar_type(), c.y);
    const test::AddLayerNormReference ref0(r, d, w, b);  // in double, through autograd for the gradients
    EXPECT_LT(test::rel_err(f[1], ref0.y.detach()), c.tol) << c.C;
    for (bool with_gs : {false, true}) {
      const at::Tensor gy = torch::randn({c.rows, c.C}, opt).to(c.y);
      const at::Tensor gs = with_gs ? torch::randn({c.rows, c.C}, opt).to(c.r) : at::Tensor();
      const std::vector<at::Tensor> g = cuda::add_layer_norm_backward(gy, gs, f[0], f[2], f[3], w, c.d);
      const std::vector<at::Tensor> ref = ref0.grads(gy, gs);
      EXPECT_LT(test::rel_err(g[0], ref[0]), c.tol) << c.C << " gs " << with_gs;
      EXPECT_LT(test::rel_err(g[0], ref[1]), c.tol) << "d's gradient is r's";
      EXPECT_TRUE(g[3].scalar_type() == c.d && at::equal(g[3], g[0].to(c.d))) << "d's, in d's dtype as .to() rounds it";
      EXPECT_LT(test::rel_err(g[1], ref[2]), c.tol) << c.C << " dw";
      EXPECT_LT(test::rel_err(g[2], ref[3]), c.tol) << c.C << " db";
      const std::vector<at::Tensor> again = cuda::add_layer_norm_backward(gy, gs, f[0], f[2], f[3], w, c.d);
      EXPECT_TRUE(at::equal(g[1], again[1]) && at::equal(g[2], again[2])) << "dw, db: the same bits every run";
    }
  }
#endif
}

// Rows longer than the backward's register buckets (cuda::kAddLayerNormMaxC) take ATen's ops, and
// give the same as those.
TEST(CudaAddLayerNorm, LongerRowsTakeATen) {
  if (!test::have_cuda_kernels()) GTEST_SKIP() << "no GPU, or a build without the own CUDA kernels";
#ifdef SLM_HAVE_CUDA_KERNELS
  const auto opt = torch::TensorOptions().device(torch::kCUDA);
  for (int64_t C : {cuda::kAddLayerNormMaxC, cuda::kAddLayerNormMaxC + 1}) {
    const at::Tensor r = torch::randn({3, C}, opt), d = torch::randn({3, C}, opt);
    const at::Tensor w = torch::randn({C}, opt), b = torch::randn({C}, opt);
    EXPECT_EQ(add_layer_norm_fused(r, d, w, b), C <= cuda::kAddLayerNormMaxC) << C;
    auto [s, y] = add_layer_norm(r, d, w, b);
    EXPECT_TRUE(at::allclose(y, at::layer_norm(r + d, {C}, w, b, 1e-5), 1e-4, 1e-4)) << C;
  }
#endif
}

// Through add_layer_norm() as a block calls it under bf16 autocast: y in bf16, gradients to all
// four inputs in their own dtypes, close to the fp32 composition's.
TEST(CudaAddLayerNorm, AutogradUnderAutocast) {
  if (!test::have_cuda_kernels()) GTEST_SKIP() << "no GPU, or a build without the own CUDA kernels";
  const auto opt = torch::TensorOptions().device(torch::kCUDA);
  const at::Tensor w = torch::randn({64}, opt), b = torch::randn({64}, opt);
  ASSERT_TRUE(add_layer_norm_fused(torch::randn({2, 5, 64}, opt), torch::randn({2, 5, 64}, opt).to(at::kBFloat16), w, b));
  test::expect_autocast_autograd_matches(at::kCUDA, 22);
}

}  // namespace
}  // namespace slm::model
