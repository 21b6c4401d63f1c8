// comm/group.h: a process group as the rest of slmtrain sees it: this rank's index, the group's
// size and an opaque handle to the c10d backend (comm/backend.h). Passed by argument, never
// global. A Group of size 1 has no backend, and every comm/ verb is a no-op on it, so call sites
// never test `if (world > 1)`.
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace slm::comm {

struct Backend;  // comm/backend.h
struct Wan;      // comm/wan.h: hierarchical / multi-channel all-reduce (comm/hierarchy.h)

struct Group {
  std::string name = "world";  // for messages: "world", "dp", "tp", "pp"
  int rank = 0;                // this process's index in the group
  int size = 1;
  std::vector<int> ranks{0};   // global rank of each member
  std::shared_ptr<Backend> backend;  // null when size == 1
  std::shared_ptr<const Wan> wan;    // set by make_wan_group; null = flat collectives
};

}  // namespace slm::comm
