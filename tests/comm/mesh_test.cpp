// tests/comm/mesh_test.cpp: the mesh's worked example (comm/mesh.h) holds.
#include <gtest/gtest.h>

#include "comm/mesh.h"

using slm::comm::MeshShape;
using Groups = std::vector<std::vector<int>>;

TEST(Mesh, WorkedExampleEightRanks) {
  MeshShape s{{"pp", "dp", "tp"}, {2, 2, 2}};
  EXPECT_EQ(slm::comm::mesh_groups(s, "tp"), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(slm::comm::mesh_groups(s, "dp"), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(slm::comm::mesh_groups(s, "pp"), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(slm::comm::mesh_coord(s, "pp", 5), 1);
  EXPECT_EQ(slm::comm::mesh_coord(s, "dp", 5), 0);
  EXPECT_EQ(slm::comm::mesh_coord(s, "tp", 5), 1);
}

TEST(Mesh, DataParallelOnlyIsOneGroup) {
  MeshShape s{{"dp"}, {3}};
  EXPECT_EQ(slm::comm::mesh_groups(s, "dp"), (Groups{{0, 1, 2}}));
}
