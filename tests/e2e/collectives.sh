# tests/e2e/collectives.sh: every dist/ verb on 1, 2 and 3 ranks (Gloo over loopback), checked by
# tests/tools/dist_check.cpp against locally computed values.
source "$(dirname "$0")/lib.sh"
CHECK=$3
for n in 1 2 3; do
  out=$("$SLM" launch -n $n -- "$CHECK" 2>&1) || { echo "$out"; fail "dist_check on $n ranks"; }
  [ "$(echo "$out" | grep -c "rank .* ok")" -eq $n ] || { echo "$out"; fail "not every rank reported ok"; }
  echo "$n ranks ok"
done
