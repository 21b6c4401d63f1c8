// comm/codec.h: lossy encodings of an fp32 vector as bytes, for what crosses slow links.
// Owns: encode, decode, encoded_bytes. Pure tensor functions (any device); the caller keeps the
// error (x - decode(encode(x))) for error feedback (parallel/diloco.cpp).
//  "none": the fp32 bytes (4 B per value);
//  "bf16": bfloat16 (2 B per value, ~3 significant digits);
//  "int8": per chunk of `chunk` values one fp32 scale (max |x| / 127) and a rounded int8 per value
//          (1 B per value + 4 B per chunk); zero chunks decode to zero.
// Bytes travel as uint8 tensors, which every c10d backend moves (Gloo 1.13 has no bf16).
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace slm::comm {

// Size in bytes of encode(x) for n values.
int64_t encoded_bytes(const std::string& codec, int64_t n, int64_t chunk);
// x: a 1-D fp32 tensor. Returns a 1-D uint8 tensor of encoded_bytes(codec, x.numel(), chunk).
at::Tensor encode(const at::Tensor& x, const std::string& codec, int64_t chunk);
// The n fp32 values that `bytes` (from encode) stands for.
at::Tensor decode(const at::Tensor& bytes, const std::string& codec, int64_t n, int64_t chunk);

}  // namespace slm::comm
