// model/gpu_attention.h: causal attention on a GPU through the fastest fused kernel LibTorch has
// for the shape (cuDNN's fused attention, flash attention or the memory-efficient kernel), chosen
// by measuring each once per GPU and shape (model/attention_choice.h) and kept in the measurement
// cache; the others stay behind it as fallbacks. LibTorch 2.6 and later (its SDPA priority order);
// before, LibTorch's own choice. Owns: the process's attention setting and gpu_attention.
#pragma once
#include <ATen/core/Tensor.h>

#include <string>

namespace slm::model {

// system.attention ("auto" | "cudnn" | "flash" | "efficient" | "math" | "default"; UserError for
// another) for this process, and the GPU's name for the cached choices (cache_dir()/attention.json);
// without a call: "auto", choices kept in memory only.
void set_gpu_attention(const std::string& setting, const std::string& gpu_name);
// The setting's candidates were measured for this shape (or it names one), and the fastest goes
// first in LibTorch's order. The first choice for each shape is logged in one line on stderr.
// REQUIRES: q, k, v on a CUDA device, (B, H, T, D).
at::Tensor gpu_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double dropout, bool train);

}  // namespace slm::model
