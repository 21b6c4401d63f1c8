// train/archive_file.h: writing a LibTorch archive to a file so that a full disk is an ordinary
// error. LibTorch's own file writer throws again from a destructor when a write fails, which
// aborts the process (std::terminate) with a checkpoint half-written.
#pragma once
#include <torch/serialize/output-archive.h>

#include <string>

namespace slm::train {

// Writes `a` to `path` (created or truncated) and fsyncs it. UserError "<path>: <strerror>" if
// any write fails (e.g. No space left on device); the file may then be partial.
void save_archive(torch::serialize::OutputArchive& a, const std::string& path);

}  // namespace slm::train
