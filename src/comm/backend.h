// comm/backend.h: what a Group's opaque handle holds (private to comm/): the c10d backend object
// (Gloo or NCCL), its kind, and the job's health monitor used to name a lost rank when a
// collective fails.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "comm/compat.h"

namespace slm::comm {

struct Health;  // comm/health.h

struct Backend {
  c10::intrusive_ptr<compat::BackendBase> pg;
  std::string kind;  // "gloo" | "nccl"
  std::shared_ptr<Health> health;
  std::atomic<int64_t> bytes_sent{0};  // this rank's payload bytes on the wire (ring-algorithm count)
};

}  // namespace slm::comm
