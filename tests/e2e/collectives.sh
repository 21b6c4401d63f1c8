# tests/e2e/collectives.sh: every comm/ verb on 1, 2 and 3 ranks (Gloo over loopback), checked by
# tests/tools/dist_check.cpp against locally computed values.
source "$(dirname "$0")/lib.sh"
CHECK=$3
run_on_ranks "$CHECK" 1 2 3 4
