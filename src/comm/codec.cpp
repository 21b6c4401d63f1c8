// comm/codec.cpp: see codec.h.
#include "comm/codec.h"

#include <ATen/ATen.h>

#include <stdexcept>

namespace slm::comm {

static int64_t chunks(int64_t n, int64_t chunk) { return (n + chunk - 1) / chunk; }

int64_t encoded_bytes(const std::string& codec, int64_t n, int64_t chunk) {
  if (codec == "none") return 4 * n;
  if (codec == "bf16") return 2 * n;
  if (codec == "int8") return n + 4 * chunks(n, chunk);
  throw std::invalid_argument("unknown codec " + codec);
}

// The bytes of a contiguous tensor (reinterpreted, not converted).
static at::Tensor as_bytes(const at::Tensor& t) { return t.contiguous().view({-1}).view(at::kByte); }

at::Tensor encode(const at::Tensor& x, const std::string& codec, int64_t chunk) {
  const at::Tensor v = x.detach().contiguous().view({-1});
  if (codec == "none") return as_bytes(v).clone();
  if (codec == "bf16") return as_bytes(v.to(at::kBFloat16));
  if (codec != "int8") throw std::invalid_argument("unknown codec " + codec);
  const int64_t n = v.numel(), k = chunks(n, chunk);
  at::Tensor padded = at::zeros({k * chunk}, v.options());
  padded.narrow(0, 0, n).copy_(v);
  at::Tensor rows = padded.view({k, chunk});
  at::Tensor scale = std::get<0>(rows.abs().max(1)).div_(127.0);  // (k)
  at::Tensor safe = at::where(scale > 0, scale, at::ones_like(scale));
  at::Tensor q = rows.div(safe.unsqueeze(1)).round_().clamp_(-127, 127).to(at::kChar).view({-1}).narrow(0, 0, n);
  return at::cat({as_bytes(q), as_bytes(scale)});
}

at::Tensor decode(const at::Tensor& bytes, const std::string& codec, int64_t n, int64_t chunk) {
  if (bytes.numel() != encoded_bytes(codec, n, chunk))
    throw std::invalid_argument("decode: byte count does not match the codec");
  const at::Tensor b = bytes.contiguous();
  if (codec == "none") return b.view(at::kFloat).clone();
  if (codec == "bf16") return b.view(at::kBFloat16).to(at::kFloat);
  const int64_t k = chunks(n, chunk);
  at::Tensor q = b.narrow(0, 0, n).view(at::kChar).to(at::kFloat);
  at::Tensor scale = b.narrow(0, n, 4 * k).clone().view(at::kFloat);  // clone: aligned storage
  at::Tensor padded = at::zeros({k * chunk}, q.options());
  padded.narrow(0, 0, n).copy_(q);
  return padded.view({k, chunk}).mul_(scale.unsqueeze(1)).view({-1}).narrow(0, 0, n).clone();
}

}  // namespace slm::comm
