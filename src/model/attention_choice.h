// model/attention_choice.h: which fused attention kernel runs a shape on a GPU, chosen by measuring
// each candidate once (as precision = "auto" is chosen): cuDNN's fused attention, flash attention
// or the memory-efficient kernel, the fastest forward + backward of the shape. The choice is kept
// per GPU, LibTorch version and shape in a small JSON file of the measurement cache, so a later run
// on the same GPU chooses at once. Owns: the setting (system.attention), the key, the pick, the
// cache. The measuring itself is model/gpu_attention.cpp's. No torch here.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace slm::model {

// One candidate's time for a shape: forward + backward (forward alone when not training), in ms;
// < 0 when the kernel cannot run that shape (head size, dtype, GPU generation).
struct AttentionTiming {
  std::string backend;  // "cudnn" | "flash" | "efficient" | "math"
  double ms = -1;
};

// system.attention: "auto" (measure cudnn, flash and efficient), one of those or "math" (that kernel
// first, the others as fallbacks), or "default" (LibTorch's own order). UserError otherwise.
std::vector<std::string> attention_candidates(const std::string& setting);
// "NVIDIA H100 80GB HBM3|torch 2.15|B8 H12 T1024 D64 bf16 causal train"
std::string attention_key(const std::string& gpu, const std::string& torch_version, int64_t B, int64_t H, int64_t T,
                          int64_t D, const std::string& dtype, bool train);
// The fastest that ran ("" when none did); a tie goes to the earlier candidate.
std::string fastest_attention(const std::vector<AttentionTiming>& timings);
// "cudnn for B8 H12 T1024 D64 bf16 causal train (cudnn 0.41 ms, flash 0.52 ms, efficient cannot run it)"
std::string describe_attention_choice(const std::string& key, const std::vector<AttentionTiming>& timings,
                                      const std::string& chosen);

// The choices made so far, read from and written to `file` ("" = in memory only). A file that
// cannot be read or parsed is started afresh (it only holds measurements), one that cannot be
// written is left as it is.
class AttentionChoices {
 public:
  explicit AttentionChoices(std::string file);
  std::optional<std::string> find(const std::string& key) const;
  void remember(const std::string& key, const std::string& backend);

 private:
  std::string file_;
  std::map<std::string, std::string> chosen_;
};

}  // namespace slm::model
