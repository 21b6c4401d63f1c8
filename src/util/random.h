// util/random.h: seeded, portable randomness for data pipelines (same result on every platform
// and standard library, unlike std::shuffle/std::uniform_int_distribution).
// Owns: SplitMix64, below(), shuffle().
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

namespace slm {

struct SplitMix64 {
  uint64_t state;
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n), n > 0, without modulo bias.
  uint64_t below(uint64_t n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    for (;;) {
      uint64_t r = next();
      if (r < limit) return r % n;
    }
  }
};

// Mixes several values into one seed (e.g. seed, epoch).
inline uint64_t mix_seed(uint64_t a, uint64_t b) {
  SplitMix64 r(a ^ (b * 0xD1B54A32D192ED03ull));
  return r.next();
}

template <typename T>
void shuffle(std::vector<T>& v, SplitMix64& rng) {  // Fisher-Yates
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
}

}  // namespace slm
