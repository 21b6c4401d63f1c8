// model/gelu_tanh.cpp: see gelu_tanh.h.
#include "model/gelu_tanh.h"

#include <torch/torch.h>
#include <ATen/Parallel.h>

#include "model/avx512_rows.h"

namespace slm::model {
namespace {

constexpr float kA = 0.7978845608028654f, kB = 0.044715f;  // sqrt(2/pi), the cubic's weight

#if defined(__x86_64__)
using namespace avx512_rows;

// tanh(k0 (x + k1 x^3)) = 1 - 2 / (exp(2u) + 1)
SLM_AVX512 inline __m512 inner_tanh(__m512 x) {
  const __m512 x2 = _mm512_mul_ps(x, x);
  const __m512 u = _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(kA)),
                                 _mm512_fmadd_ps(x2, _mm512_set1_ps(kB), _mm512_set1_ps(1.0f)));
  const __m512 e = exp16(_mm512_add_ps(u, u));
  return _mm512_sub_ps(_mm512_set1_ps(1.0f),
                       _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
}

template <typename T>
SLM_AVX512 void forward_range(const T* x, T* y, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; i += 16) {
    const __mmask16 m = tail_mask(end - i);
    const __m512 v = load16(x + i, m);
    const __m512 half_x = _mm512_mul_ps(v, _mm512_set1_ps(0.5f));
    store16(y + i, _mm512_fmadd_ps(half_x, inner_tanh(v), half_x), m);
  }
}

// d/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) k0 (1 + 3 k1 x^2)
template <typename T>
SLM_AVX512 void backward_range(const T* x, const T* dy, T* dx, int64_t begin, int64_t end) {
  const __m512 one = _mm512_set1_ps(1.0f), half = _mm512_set1_ps(0.5f);
  for (int64_t i = begin; i < end; i += 16) {
    const __mmask16 m = tail_mask(end - i);
    const __m512 v = load16(x + i, m), t = inner_tanh(v);
    const __m512 poly = _mm512_mul_ps(_mm512_set1_ps(kA),
                                      _mm512_fmadd_ps(_mm512_mul_ps(v, v), _mm512_set1_ps(3.0f * kB), one));
    const __m512 slope = _mm512_mul_ps(_mm512_mul_ps(half, v), _mm512_mul_ps(_mm512_fnmadd_ps(t, t, one), poly));
    const __m512 d = _mm512_add_ps(_mm512_mul_ps(half, _mm512_add_ps(one, t)), slope);
    store16(dx + i, _mm512_mul_ps(d, load16(dy + i, m)), m);
  }
}

template <typename F>
void over_elements(int64_t n, const F& f) {
  at::parallel_for(0, n, 1 << 14, [&](int64_t b, int64_t e) { f(b, e); });
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool supported(const at::Tensor& x) {
  return cpu_has() && x.device().is_cpu() && (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16);
}

using u16 = uint16_t;

struct GeluTanh : torch::autograd::Function<GeluTanh> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x_in) {
    const at::Tensor x = x_in.contiguous();
    at::Tensor y = at::empty_like(x);
    if (x.scalar_type() == at::kFloat)
      over_elements(x.numel(), [&](int64_t b, int64_t e) { forward_range(x.data_ptr<float>(), y.data_ptr<float>(), b, e); });
    else
      over_elements(x.numel(), [&](int64_t b, int64_t e) {
        forward_range(reinterpret_cast<const u16*>(x.data_ptr<at::BFloat16>()),
                      reinterpret_cast<u16*>(y.data_ptr<at::BFloat16>()), b, e);
      });
    ctx->save_for_backward({x});
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const at::Tensor x = ctx->get_saved_variables()[0];
    const at::Tensor dy = g[0].to(x.scalar_type()).contiguous();
    at::Tensor dx = at::empty_like(x);
    if (x.scalar_type() == at::kFloat)
      over_elements(x.numel(), [&](int64_t b, int64_t e) {
        backward_range(x.data_ptr<float>(), dy.data_ptr<float>(), dx.data_ptr<float>(), b, e);
      });
    else
      over_elements(x.numel(), [&](int64_t b, int64_t e) {
        backward_range(reinterpret_cast<const u16*>(x.data_ptr<at::BFloat16>()),
                       reinterpret_cast<const u16*>(dy.data_ptr<at::BFloat16>()),
                       reinterpret_cast<u16*>(dx.data_ptr<at::BFloat16>()), b, e);
      });
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
