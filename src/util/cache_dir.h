// util/cache_dir.h: where slmtrain caches what it measures about a machine (GEMM peaks, precision
// timings, compute profiles): $HOME/.cache/slmtrain, or /tmp/.cache/slmtrain without a HOME.
// Defined in util/files.cpp.
#pragma once
#include <string>

namespace slm {

std::string cache_dir();

}  // namespace slm
