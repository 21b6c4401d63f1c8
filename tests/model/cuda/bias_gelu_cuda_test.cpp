// tests/model/cuda/bias_gelu_cuda_test.cpp: the bias + GELU kernels (model/cuda/bias_gelu.cu)
// against the ATen composition they replace (add, then gelu with approximate = "tanh", in double
// through autograd): the output, the input gradient and the bias gradient, in fp32, bf16 and
// fp16, widths 1, 37, 3072 and 4100 (not a multiple of the kernel's 256 columns) and row counts
// 1 to 300; the bias gradient the same bits on a second run; and fc_gelu() under bf16 autocast
// against linear-with-bias + gelu. Runs wherever a GPU is; skipped elsewhere (and in a build
// without the own CUDA kernels).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "model/bias_gelu.h"
#include "model/cuda/cuda_test_util.h"
#include "util/torch_compat.h"
#ifdef SLM_HAVE_CUDA_KERNELS
#include "model/cuda/ops.h"
#endif

namespace slm::model {
namespace {

struct Case {
  int64_t rows, N;
  at::ScalarType t;
  double tol;
};

TEST(CudaBiasGelu, MatchesAddThenGelu) {
  if (!test::have_cuda_kernels()) GTEST_SKIP() << "no GPU, or a build without the own CUDA kernels";
#ifdef SLM_HAVE_CUDA_KERNELS
  torch::manual_seed(31);
  const auto opt = torch::TensorOptions().device(torch::kCUDA);
  for (const Case& c : {Case{1, 1, at::kFloat, 1e-5}, Case{7, 37, at::kFloat, 1e-5}, Case{300, 3072, at::kBFloat16, 1e-2},
                        Case{33, 4100, at::kHalf, 2e-3}, Case{5, 3072, at::kFloat, 1e-5}}) {
    const at::Tensor x = (torch::randn({c.rows, c.N}, opt) * 2).to(c.t), b = torch::randn({c.N}, opt);
    at::Tensor xd = x.to(at::kDouble).requires_grad_(true), bd = b.to(at::kDouble).requires_grad_(true);
    at::Tensor y = at::gelu(xd + bd, "tanh");
    const at::Tensor got = cuda::bias_gelu_forward(x, b);
    EXPECT_EQ(got.scalar_type(), c.t);
    EXPECT_LT(test::rel_err(got, y.detach()), c.tol) << c.N;
    const at::Tensor gy = torch::randn({c.rows, c.N}, opt).to(c.t);
    const auto ref = torch::autograd::grad({(y * gy.to(at::kDouble)).sum()}, {xd, bd});
    const std::vector<at::Tensor> g = cuda::bias_gelu_backward(gy, x, b);
    EXPECT_LT(test::rel_err(g[0], ref[0]), c.tol) << c.N << " gx";
    EXPECT_LT(test::rel_err(g[1], ref[1]), c.tol) << c.N << " db";
    EXPECT_TRUE(at::equal(g[1], cuda::bias_gelu_backward(gy, x, b)[1])) << "db: the same bits every run";
  }
#endif
}

TEST(CudaBiasGelu, FcGeluUnderAutocastMatchesLinearThenGelu) {
  if (!test::have_cuda_kernels()) GTEST_SKIP() << "no GPU, or a build without the own CUDA kernels";
  torch::manual_seed(32);
  const auto opt = torch::TensorOptions().device(torch::kCUDA);
  at::Tensor h = torch::randn({2, 9, 64}, opt).requires_grad_(true);
  at::Tensor w = (torch::randn({256, 64}, opt) * 0.1).requires_grad_(true), b = torch::randn({256}, opt).requires_grad_(true);
  ASSERT_TRUE(bias_gelu_fused(torch::empty({2, 9, 256}, opt.dtype(at::kBFloat16)), b));
  compat::set_autocast_dtype(at::kCUDA, at::kBFloat16);
  compat::set_autocast_enabled(at::kCUDA, true);
  at::Tensor y = fc_gelu(h, w, b);
  compat::set_autocast_enabled(at::kCUDA, false);
  EXPECT_EQ(y.scalar_type(), at::kBFloat16);
  y.to(at::kFloat).pow(2).sum().backward();
  at::Tensor h2 = h.detach().clone().requires_grad_(true), w2 = w.detach().clone().requires_grad_(true);
  at::Tensor b2 = b.detach().clone().requires_grad_(true);
  at::Tensor y2 = at::gelu(at::linear(h2, w2, b2), "tanh");
  y2.pow(2).sum().backward();
  EXPECT_TRUE(at::allclose(y.to(at::kFloat), y2, 3e-2, 3e-2));
  EXPECT_LT(test::rel_err(h.grad(), h2.grad().to(at::kDouble)), 3e-2);
  EXPECT_LT(test::rel_err(w.grad(), w2.grad().to(at::kDouble)), 3e-2);
  EXPECT_LT(test::rel_err(b.grad(), b2.grad().to(at::kDouble)), 3e-2);
}

}  // namespace
}  // namespace slm::model
