// report/tensorboard.cpp: see tensorboard.h. Protobuf wire format: a field is its key
// (number << 3 | wire type) as a varint, then a varint (type 0), 8 little-endian bytes (1), a
// varint length and the bytes (2), or 4 little-endian bytes (5).
#include "report/tensorboard.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <fmt/format.h>
#include <map>

#include "host/host_name.h"
#include "report/report.h"
#include "util/error.h"

namespace slm::report {
namespace {

std::array<uint32_t, 256> crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // the reflected polynomial
    t[i] = c;
  }
  return t;
}

void varint(std::string& out, uint64_t v) {
  for (; v >= 0x80; v >>= 7) out += static_cast<char>((v & 0x7F) | 0x80);
  out += static_cast<char>(v);
}
template <class T>
void little_endian(std::string& out, T v) {  // the host is little-endian on every platform LibTorch supports
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}
void key(std::string& out, int field, int wire_type) { varint(out, static_cast<uint64_t>(field << 3 | wire_type)); }
void bytes_field(std::string& out, int field, std::string_view b) {
  key(out, field, 2);
  varint(out, b.size());
  out.append(b);
}

}  // namespace

uint32_t crc32c(std::string_view bytes) {
  static const std::array<uint32_t, 256> table = crc_table();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(std::string_view bytes) {
  const uint32_t c = crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

std::string tfrecord(std::string_view data) {
  std::string len, out;
  little_endian(len, static_cast<uint64_t>(data.size()));
  out = len;
  little_endian(out, masked_crc32c(len));
  out.append(data);
  little_endian(out, masked_crc32c(data));
  return out;
}

std::string event_proto(double wall_time, int64_t step, const std::string& version,
                        const std::vector<std::pair<std::string, float>>& scalars) {
  std::string e;
  key(e, 1, 1);  // wall_time: double
  little_endian(e, wall_time);
  key(e, 2, 0);  // step: int64
  varint(e, static_cast<uint64_t>(step));
  if (!version.empty()) {
    bytes_field(e, 3, version);  // file_version
    return e;
  }
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    bytes_field(v, 1, tag);  // Summary.Value.tag
    key(v, 2, 5);            // Summary.Value.simple_value: float
    little_endian(v, value);
    bytes_field(summary, 1, v);  // Summary.value (repeated)
  }
  bytes_field(e, 5, summary);  // Event.summary
  return e;
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  path_ = fmt::format("{}/events.out.tfevents.{}.{}.{}.slm", dir, static_cast<int64_t>(now), host::host_name(), ::getpid());
  f_ = std::fopen(path_.c_str(), "ab");
  if (!f_) throw UserError(path_ + ": cannot open for writing");
  append(tfrecord(event_proto(now, 0, "brain.Event:2", {})));
}

TensorBoardWriter::~TensorBoardWriter() {
  if (f_) std::fclose(f_);
}

void TensorBoardWriter::scalars(int64_t step, double wall_time, const std::vector<std::pair<std::string, float>>& values) {
  if (!values.empty()) append(tfrecord(event_proto(wall_time, step, "", values)));
}

void TensorBoardWriter::append(const std::string& record) {
  if (std::fwrite(record.data(), 1, record.size(), f_) != record.size() || std::fflush(f_) != 0)
    throw UserError(path_ + ": cannot write (disk full?)");
}

std::string tensorboard_tag(const std::string& field) {
  static const std::map<std::string, std::string> named = {
      {"loss", "loss/train"}, {"val_loss", "loss/val"}, {"val_ppl", "loss/val_perplexity"},
      {"lr", "optim/lr"}, {"grad_norm", "optim/grad_norm"}, {"loss_scale", "optim/loss_scale"},
      {"skipped", "optim/skipped_steps"}, {"mfu", "speed/mfu"}, {"cost_usd", "cost/usd"},
      {"tokens_per_usd", "cost/tokens_per_usd"}, {"loss_drop_per_usd", "cost/loss_drop_per_usd"},
      {"peak_mem_per_rank", "memory/peak_per_rank"}, {"peak_mem_bytes", "memory/peak_bytes"},
      {"gpu_peak_mem_bytes", "memory/gpu_peak_bytes"},
      {"checkpoint_s", "checkpoint/seconds"}, {"tokens", "speed/tokens_per_step"}};
  if (const auto it = named.find(field); it != named.end()) return it->second;
  if (field == "step" || field == "time" || field == "checkpoint_async") return "";
  if (field.rfind(kMixValKey, 0) == 0) return "loss/val/" + field.substr(kMixValKey.size());  // a mixed dataset's
  if (field.rfind("bytes_", 0) == 0 || field == "comm_s" || field.rfind("agree_", 0) == 0 ||
      field.rfind("bubble", 0) == 0)
    return "comm/" + field;
  return "speed/" + field;  // tokens_per_s, step_s, data_s, compute_s, tflops_per_device, ...
}

}  // namespace slm::report
