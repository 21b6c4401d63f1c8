// embed/npy.h: 2-D arrays in NumPy's .npy format (version 1.0, C order, little endian), so that
// NumPy and other tools read an index's vectors (embeddings.npy) without slm.
// Owns: NpyArray, write_npy, read_npy. Element types: "<f4" (fp32) and "<f2" (fp16).
#pragma once
#include <cstdint>
#include <string>

namespace slm::embed {

struct NpyArray {
  std::string descr;        // "<f4" | "<f2"
  int64_t rows = 0, cols = 0;
  std::string data;         // rows * cols elements, row after row
};

void write_npy(const std::string& path, const NpyArray& a);  // atomically
NpyArray read_npy(const std::string& path);  // UserError when missing, not .npy, or truncated

}  // namespace slm::embed
