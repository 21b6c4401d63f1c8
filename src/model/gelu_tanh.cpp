// model/gelu_tanh.cpp: see gelu_tanh.h.
#include "model/gelu_tanh.h"

#include <torch/torch.h>
#include <ATen/Parallel.h>

#include "model/avx2_rows.h"
#include "model/avx512_rows.h"
#include "model/cpu_rows.h"

namespace slm::model {
namespace {

#if defined(__x86_64__)
using namespace avx512_rows;

template <typename T>
SLM_AVX512 void forward_range(const T* x, T* y, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; i += 16) {
    const __mmask16 m = tail_mask(end - i);
    store16(y + i, gelu16(load16(x + i, m)), m);
  }
}

template <typename T>
SLM_AVX512 void backward_range(const T* x, const T* dy, T* dx, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; i += 16) {
    const __mmask16 m = tail_mask(end - i);
    store16(dx + i, _mm512_mul_ps(gelu_slope16(load16(x + i, m)), load16(dy + i, m)), m);
  }
}

// The same with AVX2, fp32.
SLM_AVX2 void forward_range_avx2(const float* x, float* y, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; i += 8)
    avx2_rows::store8(y + i, avx2_rows::gelu8(avx2_rows::load8(x + i, end - i)), end - i);
}

SLM_AVX2 void backward_range_avx2(const float* x, const float* dy, float* dx, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; i += 8) {
    const __m256 g =
        _mm256_mul_ps(avx2_rows::gelu_slope8(avx2_rows::load8(x + i, end - i)), avx2_rows::load8(dy + i, end - i));
    avx2_rows::store8(dx + i, g, end - i);
  }
}

template <typename F>
void over_elements(int64_t n, const F& f) {
  at::parallel_for(0, n, 1 << 14, [&](int64_t b, int64_t e) { f(b, e); });
}

// y = gelu(x), contiguous tensors of one dtype cpu_rows_take takes.
void forward_into(const at::Tensor& x, at::Tensor& y) {
  if (cpu_rows_isa() == CpuRows::kAvx2)
    return over_elements(
        x.numel(), [&](int64_t b, int64_t e) { forward_range_avx2(x.data_ptr<float>(), y.data_ptr<float>(), b, e); });
  by_element_type(x.scalar_type(), [&](auto el) {
    using T = decltype(el);
    over_elements(x.numel(), [&](int64_t b, int64_t e) {
      forward_range(static_cast<const T*>(x.data_ptr()), static_cast<T*>(y.data_ptr()), b, e);
    });
  });
}

// dx = dy gelu'(x), likewise.
void backward_into(const at::Tensor& x, const at::Tensor& dy, at::Tensor& dx) {
  if (cpu_rows_isa() == CpuRows::kAvx2)
    return over_elements(x.numel(), [&](int64_t b, int64_t e) {
      backward_range_avx2(x.data_ptr<float>(), dy.data_ptr<float>(), dx.data_ptr<float>(), b, e);
    });
  by_element_type(x.scalar_type(), [&](auto el) {
    using T = decltype(el);
    over_elements(x.numel(), [&](int64_t b, int64_t e) {
      backward_range(static_cast<const T*>(x.data_ptr()), static_cast<const T*>(dy.data_ptr()),
                     static_cast<T*>(dx.data_ptr()), b, e);
    });
  });
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool supported(const at::Tensor& x) { return x.device().is_cpu() && cpu_rows_take(x.scalar_type()); }

struct GeluTanh : torch::autograd::Function<GeluTanh> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x_in) {
    const at::Tensor x = x_in.contiguous();
    at::Tensor y = at::empty_like(x);
    forward_into(x, y);
    ctx->save_for_backward({x});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const at::Tensor x = ctx->get_saved_variables()[0];
    const at::Tensor dy = g[0].to(x.scalar_type()).contiguous();
    at::Tensor dx = at::empty_like(x);
    backward_into(x, dy, dx);
    return {dx};
  }
};
#endif

}  // namespace

at::Tensor gelu_tanh(const at::Tensor& x) {
#if defined(__x86_64__)
  if (supported(x)) return GeluTanh::apply(x);
#endif
  return at::gelu(x, "tanh");
}

}  // namespace slm::model
