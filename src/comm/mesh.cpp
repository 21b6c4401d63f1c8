// comm/mesh.cpp: see mesh.h.
#include "comm/mesh.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "comm/world.h"
#include "util/error.h"

namespace slm::comm {
namespace {

size_t dim_index(const MeshShape& s, const std::string& dim) {
  auto it = std::find(s.names.begin(), s.names.end(), dim);
  if (it == s.names.end()) throw std::logic_error("mesh has no dimension " + dim);
  return static_cast<size_t>(it - s.names.begin());
}

int stride_of(const MeshShape& s, size_t d) {
  int stride = 1;
  for (size_t k = d + 1; k < s.sizes.size(); ++k) stride *= s.sizes[k];
  return stride;
}

int world_of(const MeshShape& s) {
  int n = 1;
  for (int x : s.sizes) n *= x;
  return n;
}

}  // namespace

int mesh_coord(const MeshShape& s, const std::string& dim, int rank) {
  size_t d = dim_index(s, dim);
  return rank / stride_of(s, d) % s.sizes[d];
}

std::vector<std::vector<int>> mesh_groups(const MeshShape& s, const std::string& dim) {
  const size_t d = dim_index(s, dim);
  const int stride = stride_of(s, d), n = world_of(s);
  std::vector<std::vector<int>> out;
  for (int r = 0; r < n; ++r) {
    if (mesh_coord(s, dim, r) != 0) continue;  // r is the first member of its group
    std::vector<int> g;
    for (int k = 0; k < s.sizes[d]; ++k) g.push_back(r + k * stride);
    out.push_back(g);
  }
  return out;
}

ProcessGroups make_process_groups(World& w, const MeshShape& shape) {
  if (world_of(shape) != w.world.size) {
    std::vector<std::string> parts;
    for (size_t i = 0; i < shape.names.size(); ++i)
      parts.push_back(fmt::format("{}({})", shape.names[i], shape.sizes[i]));
    throw UserError(fmt::format("parallel: {} = {} != world size {}", fmt::join(parts, "*"),
                                world_of(shape), w.world.size));
  }
  ProcessGroups pg;
  pg.shape = shape;
  pg.world = w.world;
  for (const std::string& name : {std::string("dp"), std::string("tp"), std::string("pp")}) {
    Group g;
    g.name = name;
    g.ranks = {w.world.rank};
    g.rank = 0;
    if (std::find(shape.names.begin(), shape.names.end(), name) != shape.names.end()) {
      // Every rank walks every group of this dimension in the same order and joins its own.
      for (const auto& members : mesh_groups(shape, name))
        if (std::find(members.begin(), members.end(), w.world.rank) != members.end())
          g = new_group(w, name, members);
    }
    (name == "dp" ? pg.dp : name == "tp" ? pg.tp : pg.pp) = g;
  }
  return pg;
}

}  // namespace slm::comm
