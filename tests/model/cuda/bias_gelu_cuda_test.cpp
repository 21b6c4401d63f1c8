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
#include "model/bias_gelu_check.h"
#include "model/cuda/cuda_test_util.h"
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
    const test::BiasGeluReference r(x, b);
    const at::Tensor got = cuda::bias_gelu_forward(x, b);
    EXPECT_EQ(got.scalar_type(), c.t);
    EXPECT_LT(test::rel_err(got, r.y.detach()), c.tol) << c.N;
    const at::Tensor gy = torch::randn({c.rows, c.N}, opt).to(c.t);
    const std::vector<at::Tensor> ref = r.grads(gy);
    const std::vector<at::Tensor> g = cuda::bias_gelu_backward(gy, x, b);
    EXPECT_LT(test::rel_err(g[0], ref[0]), c.tol) << c.N << " gx";
    EXPECT_LT(test::rel_err(g[1], ref[1]), c.tol) << c.N << " db";
    EXPECT_TRUE(at::equal(g[1], cuda::bias_gelu_backward(gy, x, b)[1])) << "db: the same bits every run";
  }
#endif
}

TEST(CudaBiasGelu, FcGeluUnderAutocastMatchesLinearThenGelu) {
  if (!test::have_cuda_kernels()) GTEST_SKIP() << "no GPU, or a build without the own CUDA kernels";
  test::expect_fc_gelu_autocast_matches(at::kCUDA, 32);
}

}  // namespace
}  // namespace slm::model
