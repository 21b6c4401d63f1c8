// dist/group.h: a process group as the rest of slmtrain sees it: this rank's index, the group's
// size and an opaque handle to the c10d backend (dist/backend.h). Passed by argument, never
// global. A Group of size 1 has no backend, and every dist/ verb is a no-op on it, so call sites
// never test `if (world > 1)`.
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace slm::dist {

struct Backend;  // dist/backend.h
struct Wan;      // dist/wan.h: hierarchical / multi-channel all-reduce (dist/hierarchy.h)

struct Group {
  std::string name = "world";  // for messages: "world", "dp", "tp", "pp"
  int rank = 0;                // this process's index in the group
  int size = 1;
  std::vector<int> ranks{0};   // global rank of each member
  std::shared_ptr<Backend> backend;  // null when size == 1
  std::shared_ptr<const Wan> wan;    // set by make_wan_group; null = flat collectives
};

}  // namespace slm::dist
