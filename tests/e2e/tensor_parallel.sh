# tests/e2e/tensor_parallel.sh: the tensor-parallel building blocks (sharded block, vocabulary-
# parallel embedding, LM head and cross-entropy) give the single-process loss and gradients on
# 1, 2 and 4 ranks (tests/tools/tp_check.cpp, tolerance 1e-5).
source "$(dirname "$0")/lib.sh"
CHECK=$3
run_on_ranks "$CHECK" 1 2 4
