# tests/e2e/tensor_parallel.sh: the tensor-parallel building blocks (sharded block, vocabulary-
# parallel embedding, LM head and cross-entropy) give the single-process loss and gradients on
# 1, 2 and 4 ranks (tests/tools/tp_check.cpp, tolerance 1e-5).
source "$(dirname "$0")/lib.sh"
CHECK=$3
for n in 1 2 4; do
  out=$("$SLM" launch -n $n -- "$CHECK" 2>&1) || { echo "$out"; fail "tp_check on $n ranks"; }
  [ "$(echo "$out" | grep -c "rank .* ok")" -eq $n ] || { echo "$out"; fail "not every rank reported ok"; }
  echo "$n ranks ok"
done
