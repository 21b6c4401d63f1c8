// embed/npy.cpp: see npy.h. The header is a Python dict literal padded with spaces to a multiple
// of 64 bytes; only the fields written here are parsed back.
#include "embed/npy.h"

#include <cstring>
#include <fmt/format.h>
#include <regex>

#include "util/error.h"
#include "util/files.h"

namespace slm::embed {
namespace {

int64_t element_bytes(const std::string& descr, const std::string& path) {
  if (descr == "<f4") return 4;
  if (descr == "<f2") return 2;
  throw UserError(fmt::format("{}: element type '{}' is not <f4 or <f2", path, descr));
}

}  // namespace

void write_npy(const std::string& path, const NpyArray& a) {
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}, {}), }}", a.descr, a.rows, a.cols);
  const size_t unpadded = 10 + dict.size() + 1;  // magic, version, length; the dict; '\n'
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string head = "\x93NUMPY";
  head += '\x01';
  head += '\x00';
  head += static_cast<char>(dict.size() & 0xff);
  head += static_cast<char>(dict.size() >> 8);
  AtomicFile f(path);
  f.write(head);
  f.write(dict);
  f.write(a.data);
  f.commit();
}

NpyArray read_npy(const std::string& path) {
  if (!path_exists(path)) throw UserError(fmt::format("{}: not found", path));
  const std::string raw = read_file(path);
  if (raw.size() < 10 || raw.compare(0, 6, "\x93NUMPY") != 0 || raw[6] != 1)
    throw UserError(fmt::format("{}: not a version 1 .npy file", path));
  const size_t hlen = static_cast<unsigned char>(raw[8]) | (static_cast<size_t>(static_cast<unsigned char>(raw[9])) << 8);
  if (raw.size() < 10 + hlen) throw UserError(fmt::format("{}: truncated header", path));
  const std::string dict = raw.substr(10, hlen);
  std::smatch m;
  static const std::regex re(R"('descr': '([^']*)', 'fortran_order': False, 'shape': \((\d+), (\d+)\))");
  if (!std::regex_search(dict, m, re)) throw UserError(fmt::format("{}: not a 2-D C-order array", path));
  NpyArray a;
  a.descr = m[1];
  a.rows = std::stoll(m[2]);
  a.cols = std::stoll(m[3]);
  const size_t want = static_cast<size_t>(a.rows * a.cols * element_bytes(a.descr, path));
  if (raw.size() != 10 + hlen + want)
    throw UserError(fmt::format("{}: {} bytes of data, expected {} for {} x {}", path, raw.size() - 10 - hlen, want,
                                a.rows, a.cols));
  a.data = raw.substr(10 + hlen);
  return a;
}

}  // namespace slm::embed
