// planner/stage_split.h: where to cut the model into pipeline stages: a dynamic program over
// contiguous layer ranges that minimises the slowest stage (as Alpa's stage DP, but each stage
// has its own devices, so its own speed and memory cap). Owns: split_layers. Pure.
// Example: 24 layers, 2 stages, stage 1 three times slower per layer -> [0, 18) and [18, 24).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace slm::planner {

// Cost of stage s holding layers [first, end): its time per micro-batch, or +infinity when it
// does not fit in memory.
using StageCost = std::function<double(int stage, int64_t first, int64_t end)>;

// Boundaries b_0 = 0 < b_1 < ... < b_stages = n_layer (every stage at least one layer) minimising
// max_s cost(s, b_s, b_s+1); ties go to the split with the smaller sum. Empty when no split is
// finite. O(stages · n_layer²) cost calls.
std::vector<int64_t> split_layers(int64_t n_layer, int stages, const StageCost& cost);

}  // namespace slm::planner
