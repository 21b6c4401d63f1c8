// comm/wan.h: what a Group carries when it uses the WAN-aware all-reduce (comm/hierarchy.h).
// Private to comm/.
#pragma once
#include <ATen/core/Tensor.h>

#include <vector>

#include "comm/collectives.h"
#include "comm/group.h"

namespace slm::comm {

struct Wan {
  bool hierarchical = false;
  int sites = 1;
  Group local, cross;           // this rank's site, and its position across the sites
  bool compress = false;        // bf16 across sites
  std::vector<Group> channels;  // extra connections of the same ranks (chunked all-reduce)
  int64_t chunk_bytes = 4 << 20;      // 0 = auto (hierarchy.cpp chunk_elements)
  int64_t min_chunk_bytes = 4 << 20;  // auto chunks are at least this (hierarchy.h min_chunk_bytes)
};

Pending wan_all_reduce(const at::Tensor& t, const Group& g);

}  // namespace slm::comm
