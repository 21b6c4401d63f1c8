// bench/micro/tokenizer_bench.cpp: tokenizer speed on a real corpus.
// Trains a BPE (all threads), then measures single-core encode throughput (MB/s) with a cold and
// a warm word cache, and decode throughput. Usage: bench_tokenizer CORPUS [VOCAB] [REPEAT]
// REPEAT concatenates the corpus with itself to reach a size (e.g. 10 MB for the training target).
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "tokenizer/bpe_train.h"
#include "tokenizer/encoder.h"
#include "tokenizer/word_count.h"
#include "util/files.h"
#include "util/threads.h"

using namespace slm;
using Clock = std::chrono::steady_clock;

static double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_tokenizer CORPUS [VOCAB=32768] [REPEAT=1]\n");
    return 2;
  }
  std::string one = read_file(argv[1]), text;
  int vocab = argc > 2 ? std::atoi(argv[2]) : 32768;
  int repeat = argc > 3 ? std::atoi(argv[3]) : 1;
  for (int i = 0; i < repeat; ++i) text += one;
  std::printf("corpus %s x%d: %.2f MB; threads %d\n", argv[1], repeat, text.size() / 1e6,
              default_threads());

  auto t = Clock::now();
  tokenizer::WordCounts counts = tokenizer::count_words({text}, default_threads());
  double t_count = since(t);
  t = Clock::now();
  tokenizer::TrainOptions opt;
  opt.vocab_size = vocab;
  tokenizer::BpeModel m = tokenizer::train_bpe(counts, opt);
  double t_merge = since(t);
  std::printf("train  vocab %d: count words %.2f s + merges %.2f s = %.2f s (%zu distinct words)\n",
              m.vocab_size(), t_count, t_merge, t_count + t_merge, counts.size());

  tokenizer::Encoder enc(m);
  std::vector<uint32_t> ids;
  t = Clock::now();
  enc.encode(text, ids);
  double cold = since(t);
  size_t n = ids.size();
  ids.clear();
  t = Clock::now();
  enc.encode(text, ids);
  double warm = since(t);
  t = Clock::now();
  std::string back = tokenizer::decode(m, ids);
  double dec = since(t);
  std::printf("encode 1 core: %.2f MB/s cold cache, %.2f MB/s warm cache (%zu tokens, %.2f "
              "bytes/token)\n",
              text.size() / 1e6 / cold, text.size() / 1e6 / warm, n,
              static_cast<double>(text.size()) / n);
  std::printf("decode 1 core: %.1f MB/s; round trip %s\n", text.size() / 1e6 / dec,
              back == text ? "exact" : "MISMATCH");
  return back == text ? 0 : 1;
}
