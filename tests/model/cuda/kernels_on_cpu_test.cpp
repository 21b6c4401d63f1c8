// tests/model/cuda/kernels_on_cpu_test.cpp: the own CUDA kernels' source (src/model/cuda/*.cu),
// run on the CPU by tests/model/cuda/cuda_on_cpu.h, against references in double: the softmax
// cross-entropy (padded columns, a -inf logit, a target outside the vocabulary, rows longer than
// a block's pass), the residual add + LayerNorm both ways (each register bucket and its edges,
// several warps per block and rows per warp, with and without the residual's gradient, the mixed
// dtypes of bf16 autocast with the delta's gradient in bf16 from the same pass) and bias + GELU both ways (row groups that do not divide the rows),
// in fp32, bf16 and fp16; and the launchers' refusals. This checks the kernels' indexing, barriers
// and sums in every build; tests/model/cuda/*_cuda_test.cpp check them on a GPU against ATen, and
// bench/gpu/gpu_kernels.sh measures them. First, that the stand-in keeps CUDA's barrier rules.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "model/cuda/cuda_on_cpu.h"
#include "model/cuda/kernels.h"

namespace slm::model::cuda {
namespace {

// Each thread adds its block's values through a warp shuffle and a shared array.
__global__ void block_sum(const float* in, float* out) {
  __shared__ float per_warp[2];
  float v = in[blockIdx.x * 64 + threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) per_warp[threadIdx.x / 32] = v;
  __syncthreads();
  out[blockIdx.x * 64 + threadIdx.x] = per_warp[0] + per_warp[1];
}

// Half of a warp at a shuffle, the other half at __syncthreads: a hang on a GPU.
__global__ void split_barrier(float* out) {
  if (threadIdx.x < 16) out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
  else __syncthreads();
}

TEST(CudaOnCpu, BarriersAndShufflesAsCudaDefinesThem) {
  std::vector<float> in(128), out(128, -1.0f);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i);
  SLM_LAUNCH(2, 64, nullptr, block_sum)(in.data(), out.data());
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  for (size_t i = 0; i < 128; ++i) EXPECT_EQ(out[i], i < 64 ? 2016.0f : 6112.0f) << i;  // 0+...+63, 64+...+127
  SLM_LAUNCH(1, 32, nullptr, split_barrier)(out.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  SLM_LAUNCH(1, 2048, nullptr, split_barrier)(out.data());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
}

// Host-side values in a kernel dtype, and back.
float value(float v) { return v; }
float value(__nv_bfloat16 v) { return __bfloat162float(v); }
float value(__half v) { return __half2float(v); }
template <typename T> T stored(float v);
template <> float stored<float>(float v) { return v; }
template <> __nv_bfloat16 stored<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <> __half stored<__half>(float v) { return __float2half(v); }
template <typename T> DType dtype();
template <> DType dtype<float>() { return DType::kFloat; }
template <> DType dtype<__nv_bfloat16>() { return DType::kBFloat16; }
template <> DType dtype<__half>() { return DType::kHalf; }
// A tolerance for a value rounded to T once (relative to 1), with fp32 sums of a few hundred terms.
template <typename T> double tolerance() { return std::is_same_v<T, float> ? 2e-5 : std::is_same_v<T, __half> ? 2e-3 : 1e-2; }

template <typename T>
std::vector<T> random_values(size_t n, float scale, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<T> v(n);
  for (T& x : v) x = stored<T>(normal(rng));
  return v;
}

template <typename T>
void check_xent_rows(int64_t rows, int64_t V, int64_t width) {
  std::mt19937 rng(7);
  std::vector<T> logits = random_values<T>(rows * width, 3.0f, rng);
  std::vector<int64_t> targets(rows);
  for (int64_t r = 0; r < rows; ++r) targets[r] = (r * 7919) % V;
  targets[0] = V - 1;
  if (rows > 2) targets[1] = -1, targets[2] = V;  // outside [0, V): NaN loss
  for (int64_t r = 0; r < rows; ++r)  // the padded vocabulary's columns: large, so that reading one shows
    for (int64_t i = V; i < width; ++i) logits[r * width + i] = stored<T>(20.0f);
  if (rows > 1) logits[width + 1] = stored<T>(-std::numeric_limits<float>::infinity());  // adds nothing
  const std::vector<T> before = logits;
  std::vector<float> loss(rows, 0.0f);
  ASSERT_EQ(xent_rows(logits.data(), loss.data(), targets.data(), rows, width, V, true, dtype<T>(), nullptr), 0);
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, sum = 0;
    for (int64_t i = 0; i < V; ++i) m = std::max(m, double(value(before[r * width + i])));
    for (int64_t i = 0; i < V; ++i) sum += std::exp(value(before[r * width + i]) - m);
    const double lse = m + std::log(sum);
    const int64_t t = targets[r];
    if (t < 0 || t >= V) EXPECT_TRUE(std::isnan(loss[r])) << r;
    else EXPECT_NEAR(loss[r], lse - value(before[r * width + t]), 1e-4 * std::max(1.0, lse)) << r;
    for (int64_t i = 0; i < width; ++i) {
      const double p = i < V ? std::exp(value(before[r * width + i]) - lse) : 0.0;
      EXPECT_NEAR(value(logits[r * width + i]), p - (i == t ? 1.0 : 0.0), tolerance<T>()) << r << " " << i;
    }
  }
  const std::vector<T> grads = logits;  // without the gradient, the row stays as it is
  std::vector<float> again(rows);
  ASSERT_EQ(xent_rows(logits.data(), again.data(), targets.data(), rows, width, V, false, dtype<T>(), nullptr), 0);
  for (int64_t i = 0; i < rows * width; ++i) ASSERT_EQ(std::memcmp(&grads[i], &logits[i], sizeof(T)), 0) << i;
}

TEST(CudaKernelsOnCpu, XentRowsMatchesSoftmaxCrossEntropy) {
  check_xent_rows<float>(4, 37, 40);
  check_xent_rows<__nv_bfloat16>(4, 37, 40);
  check_xent_rows<__half>(4, 37, 40);
  check_xent_rows<float>(2, 5000, 5003);  // more than one pass of 8 x 512 elements per row
  check_xent_rows<__nv_bfloat16>(1, 4099, 4224);
}

// add_layer_norm_forward and _backward against double, for rows of C.
template <typename TS, typename TD, typename TY>
void check_add_layer_norm(int64_t rows, int64_t C, int64_t warps, bool with_gs) {
  std::mt19937 rng(static_cast<unsigned>(11 + C));
  const std::vector<TS> r = random_values<TS>(rows * C, 2.0f, rng);
  const std::vector<TD> d = random_values<TD>(rows * C, 1.0f, rng);
  std::vector<float> w(C), b(C);
  for (int64_t c = 0; c < C; ++c) w[c] = 1.0f + 0.01f * static_cast<float>(c % 13), b[c] = 0.1f * static_cast<float>(c % 5);
  std::vector<TS> s(rows * C);
  std::vector<TY> y(rows * C);
  std::vector<float> mean(rows), rstd(rows);
  AddLayerNorm a;
  a.r = r.data(), a.d = d.data(), a.s = s.data(), a.y = y.data();
  a.s_type = dtype<TS>(), a.d_type = dtype<TD>(), a.y_type = dtype<TY>();
  a.w = w.data(), a.b = b.data(), a.mean = mean.data(), a.rstd = rstd.data(), a.rows = rows, a.C = C;
  ASSERT_EQ(add_layer_norm_forward(a, nullptr), 0);

  const std::vector<TY> gy = random_values<TY>(rows * C, 1.0f, rng);
  const std::vector<TS> gs = random_values<TS>(rows * C, 1.0f, rng);
  std::vector<TS> gx(rows * C);
  constexpr bool kWithGd = std::is_same_v<TD, TY> && !std::is_same_v<TD, TS>;  // d's gradient in its dtype
  std::vector<TY> gd(rows * C, stored<TY>(-7.0f));
  std::vector<float> dwdb(2 * C, -1.0f), partial(warps * 2 * C, -1.0f);
  AddLayerNormGrad g;
  g.gy = gy.data(), g.gs = with_gs ? gs.data() : nullptr, g.s = s.data(), g.s_type = dtype<TS>(), g.y_type = dtype<TY>();
  g.mean = mean.data(), g.rstd = rstd.data(), g.w = w.data(), g.gx = gx.data(), g.dwdb = dwdb.data();
  g.gd = kWithGd ? gd.data() : nullptr;
  g.partial = partial.data(), g.rows = rows, g.C = C, g.warps = warps;
  ASSERT_EQ(add_layer_norm_backward(g, nullptr), 0);

  const double tol = tolerance<TY>() + tolerance<TS>();
  std::vector<double> dw(C, 0.0), db(C, 0.0);
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t off = row * C;
    double mu = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) {
      ASSERT_EQ(value(s[off + c]), value(stored<TS>(value(r[off + c]) + value(d[off + c])))) << "s = r + d, rounded once";
      mu += value(s[off + c]) / double(C);
    }
    for (int64_t c = 0; c < C; ++c) var += std::pow(value(s[off + c]) - mu, 2) / double(C);
    const double inv = 1.0 / std::sqrt(var + 1e-5);
    EXPECT_NEAR(mean[row], mu, 1e-5 * (1 + std::abs(mu)));
    EXPECT_NEAR(rstd[row], inv, 1e-4 * inv);
    double mean_g = 0, mean_gx = 0;
    for (int64_t c = 0; c < C; ++c) {
      const double xhat = (value(s[off + c]) - mu) * inv, dy = value(gy[off + c]);
      EXPECT_NEAR(value(y[off + c]), xhat * w[c] + b[c], 4 * tol * (1 + std::abs(xhat * w[c] + b[c]))) << row << " " << c;
      mean_g += dy * w[c] / double(C), mean_gx += dy * w[c] * xhat / double(C);
      dw[c] += dy * xhat, db[c] += dy;
    }
    for (int64_t c = 0; c < C; ++c) {
      const double xhat = (value(s[off + c]) - mu) * inv;
      const double want = inv * (value(gy[off + c]) * w[c] - mean_g - xhat * mean_gx) + (with_gs ? value(gs[off + c]) : 0.0);
      EXPECT_NEAR(value(gx[off + c]), want, 4 * tol * (1 + std::abs(want)) * std::max(1.0, inv)) << row << " " << c;
      if (kWithGd) {
        ASSERT_EQ(value(gd[off + c]), value(stored<TY>(value(gx[off + c])))) << "gd: gx rounded to d's dtype";
      }
    }
  }
  for (int64_t c = 0; c < C; ++c) {
    EXPECT_NEAR(dwdb[c], dw[c], 1e-4 * rows * (1 + std::abs(dw[c]))) << "dw " << c;
    EXPECT_NEAR(dwdb[C + c], db[c], 1e-4 * rows * (1 + std::abs(db[c]))) << "db " << c;
  }
}

TEST(CudaKernelsOnCpu, AddLayerNormMatchesTheComposition) {
  for (int64_t C : {1, 37, 256, 257, 768, 1025, 2048})  // each register bucket and its edges
    check_add_layer_norm<float, float, float>(19, C, 16, C % 2 == 1);
  check_add_layer_norm<float, __nv_bfloat16, __nv_bfloat16>(37, 768, 8, true);  // bf16 autocast's dtypes
  check_add_layer_norm<__half, __half, __half>(9, 100, 8, true);
  check_add_layer_norm<__nv_bfloat16, __nv_bfloat16, __nv_bfloat16>(5, 64, 24, false);  // warps without a row
  check_add_layer_norm<float, float, float>(150, 37, 72, true);  // more partial rows than a column's 32 slices
}

TEST(CudaKernelsOnCpu, AddLayerNormRefusesWhatItCannotRun) {
  std::vector<float> buf(2 * 2049, 0.0f);
  AddLayerNormGrad g;
  g.gy = g.s = buf.data(), g.mean = g.rstd = g.w = buf.data(), g.gx = buf.data(), g.dwdb = g.partial = buf.data();
  g.rows = 1, g.C = kAddLayerNormMaxC + 1, g.warps = 8;
  EXPECT_EQ(add_layer_norm_backward(g, nullptr), cudaErrorInvalidValue) << "rows longer than the buckets";
  g.C = 4, g.warps = 12;
  EXPECT_EQ(add_layer_norm_backward(g, nullptr), cudaErrorInvalidValue) << "warps not a multiple of a block's";
}

double gelu(double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
double gelu_grad(double x) {
  const double t = std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * x * x);
}

template <typename T>
void check_bias_gelu(int64_t rows, int64_t N, int64_t groups) {
  std::mt19937 rng(static_cast<unsigned>(5 + N));
  const std::vector<T> x = random_values<T>(rows * N, 2.0f, rng), gy = random_values<T>(rows * N, 1.0f, rng);
  std::vector<float> b(N);
  for (int64_t c = 0; c < N; ++c) b[c] = 0.05f * static_cast<float>(c % 7) - 0.1f;
  std::vector<T> y(rows * N), gx(rows * N);
  BiasGelu a;
  a.x = x.data(), a.b = b.data(), a.y = y.data(), a.type = dtype<T>(), a.rows = rows, a.N = N, a.groups = groups;
  ASSERT_EQ(bias_gelu_forward(a, nullptr), 0);
  std::vector<float> db(N, -1.0f), partial(groups * N, -1.0f);
  BiasGeluGrad g;
  g.gy = gy.data(), g.x = x.data(), g.b = b.data(), g.gx = gx.data(), g.db = db.data(), g.partial = partial.data();
  g.type = dtype<T>(), g.rows = rows, g.N = N, g.groups = groups;
  ASSERT_EQ(bias_gelu_backward(g, nullptr), 0);
  const double tol = tolerance<T>();
  std::vector<double> sum(N, 0.0);
  for (int64_t i = 0; i < rows * N; ++i) {
    const double v = double(value(x[i])) + b[i % N];
    EXPECT_NEAR(value(y[i]), gelu(v), tol * (1 + std::abs(gelu(v)))) << i;
    const double want = value(gy[i]) * gelu_grad(v);
    EXPECT_NEAR(value(gx[i]), want, tol * (1 + std::abs(want))) << i;
    sum[i % N] += value(gx[i]);  // db is the sum of the rounded input gradient
  }
  for (int64_t c = 0; c < N; ++c) EXPECT_NEAR(db[c], sum[c], 1e-5 * rows * (1 + std::abs(sum[c]))) << c;
}

// Where x < 0 makes the GELU small its value and slope keep fp32's relative precision (against
// x sigmoid(2u) in double: 1 + tanh(u) cancels there, in double too below x ~ -5.5).
TEST(CudaKernelsOnCpu, BiasGeluPreciseWhereNegativeInputsMakeItSmall) {
  const int64_t n = 512;
  std::vector<float> x(n), b{0.0f}, y(n), gy(n, 1.0f), gx(n), db(1), partial(1);
  for (int64_t i = 0; i < n; ++i) x[i] = -9.0f + 7.5f * static_cast<float>(i) / (n - 1);  // -9 .. -1.5
  BiasGelu a;
  a.x = x.data(), a.b = b.data(), a.y = y.data(), a.type = dtype<float>(), a.rows = n, a.N = 1, a.groups = 1;
  ASSERT_EQ(bias_gelu_forward(a, nullptr), 0);
  BiasGeluGrad g;
  g.gy = gy.data(), g.x = x.data(), g.b = b.data(), g.gx = gx.data(), g.db = db.data(), g.partial = partial.data();
  g.type = dtype<float>(), g.rows = n, g.N = 1, g.groups = 1;
  ASSERT_EQ(bias_gelu_backward(g, nullptr), 0);
  for (int64_t i = 0; i < n; ++i) {
    const double v = x[i], s = 1 / (1 + std::exp(-2 * 0.7978845608028654 * (v + 0.044715 * v * v * v)));
    const double slope = s + 2 * 0.7978845608028654 * (1 + 3 * 0.044715 * v * v) * v * s * (1 - s);
    EXPECT_NEAR(y[i], v * s, 2e-5 * std::abs(v * s)) << v;
    EXPECT_NEAR(gx[i], slope, 2e-5 * std::abs(slope)) << v;
  }
}

TEST(CudaKernelsOnCpu, BiasGeluMatchesTheComposition) {
  check_bias_gelu<float>(19, 37, 3);  // 3 groups: rows 0, 3, ... in runs of 8 with a remainder
  check_bias_gelu<float>(19, 300, 1);
  check_bias_gelu<__nv_bfloat16>(40, 300, 19);
  check_bias_gelu<__half>(7, 513, 7);
  check_bias_gelu<float>(90, 40, 45);  // more partial rows than a column's 32 slices
  BiasGelu a;
  a.rows = 1, a.N = 1, a.groups = 0;
  EXPECT_EQ(bias_gelu_forward(a, nullptr), cudaErrorInvalidValue) << "no row group";
}

}  // namespace
}  // namespace slm::model::cuda
