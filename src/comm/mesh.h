// comm/mesh.h: the process mesh: the world factored into named dimensions, each with its own
// subgroups, so later layouts add a dimension instead of rewiring.
// Owns: MeshShape (pure), mesh_groups (pure, unit-tested), ProcessGroups and make_process_groups.
// The shape lists dimensions outermost first; the last varies fastest, so it should be the one
// with the fastest links (tensor parallel inside a machine, pipeline across machines).
// Worked example: 8 ranks, shape pp=2, dp=2, tp=2 (order "pp,dp,tp"); rank = (pp*2 + dp)*2 + tp.
//   tp groups {0,1} {2,3} {4,5} {6,7};  dp groups {0,2} {1,3} {4,6} {5,7};  pp groups {0,4} {1,5}
//   {2,6} {3,7}.
#pragma once
#include <string>
#include <vector>

#include "comm/group.h"

namespace slm::comm {

struct World;  // comm/world.h

struct MeshShape {
  std::vector<std::string> names;  // outermost first, e.g. {"pp", "dp", "tp"}
  std::vector<int> sizes;          // same order; product = world size
};

// Every group along dimension `dim`: lists of global ranks (ascending), in order of first rank.
std::vector<std::vector<int>> mesh_groups(const MeshShape& shape, const std::string& dim);
// This rank's coordinate along `dim`.
int mesh_coord(const MeshShape& shape, const std::string& dim, int rank);

// The groups one rank takes part in. Built once from the layout and passed down as an argument.
struct ProcessGroups {
  MeshShape shape;
  Group world, dp, tp, pp;
  Group outer;  // DiLoCo (parallel/diloco.h): this rank's position in every site; dp then stays in the site
  Group site;   // DiLoCo: every rank of this rank's site (its pipeline's gradient norm); else the world
};

// Creates this rank's group along each dimension of shape (a dimension of size 1 gets a trivial
// Group; one spanning the world reuses the world's connections). UserError if the product of the
// sizes is not the world size.
ProcessGroups make_process_groups(World& w, const MeshShape& shape);

}  // namespace slm::comm
