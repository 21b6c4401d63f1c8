// report/tensorboard.h: live training curves for TensorBoard (and W&B's `wandb sync`), written
// directly: an event file is a TFRecord stream (each record: its length, a masked CRC-32C of the
// length, the bytes, a masked CRC-32C of the bytes) of tensorflow.Event protocol buffers, the
// first saying "brain.Event:2", each later one holding scalar summaries (tag, float value) of one
// step at one wall time. Owns: crc32c, the record framing, the few protobuf fields an Event with
// scalars needs, and TensorBoardWriter (appends and flushes one event per call, so
// `tensorboard --logdir runs/` shows a run as it trains). No torch, no protobuf library.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace slm::report {

uint32_t crc32c(std::string_view bytes);  // CRC-32C (Castagnoli), as in iSCSI and TFRecord
uint32_t masked_crc32c(std::string_view bytes);  // TFRecord's rotation plus constant
std::string tfrecord(std::string_view data);  // one framed record
// The serialized tensorflow.Event: wall_time and step, then either file_version (when `version` is
// not empty) or a Summary of simple_value scalars.
std::string event_proto(double wall_time, int64_t step, const std::string& version,
                        const std::vector<std::pair<std::string, float>>& scalars);

// RUN/events.out.tfevents.<unix time>.<host>.<pid>.slm, one per training session (TensorBoard
// reads every file of a folder as one run); its first record is the version event. Writes and flushes one record per call; a write that fails (a full disk) is a
// UserError naming the file.
class TensorBoardWriter {
 public:
  explicit TensorBoardWriter(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;
  void scalars(int64_t step, double wall_time, const std::vector<std::pair<std::string, float>>& values);
  const std::string& path() const { return path_; }

 private:
  void append(const std::string& record);
  std::string path_;
  FILE* f_ = nullptr;
};

// The TensorBoard tag of a metrics.jsonl field, grouped by what it measures ("loss" -> "loss/train",
// "tokens_per_s" -> "speed/tokens_per_s", "bytes_dp" -> "comm/bytes_dp"); "" for fields that are
// not curves (step, time, flags).
std::string tensorboard_tag(const std::string& field);

}  // namespace slm::report
