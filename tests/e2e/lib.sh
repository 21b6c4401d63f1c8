# tests/e2e/lib.sh: helpers for the end-to-end tests of the `slm` binary.
# Each test script is run by CTest as: bash SCRIPT PATH_TO_SLM PATH_TO_SHARED_DATA
# Exit 0 = pass, 77 = skipped (CTest SKIP_RETURN_CODE), anything else = fail.
set -euo pipefail
SLM=$1
SHARED=${2:-}
WORK=$(mktemp -d /tmp/slm_e2e_XXXXXX)
trap 'rm -rf "$WORK"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

# expect_error "substring" cmd...: the command must exit non-zero, print exactly one line on
# stderr, and that line must contain the substring.
expect_error() {
  local want=$1; shift
  local err rc=0
  err=$("$@" 2>&1 >/dev/null) || rc=$?
  [ "$rc" -ne 0 ] || fail "expected failure, got success: $*"
  [ "$rc" -lt 128 ] || fail "crashed (exit $rc): $*"
  [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "expected one line on stderr, got: $err"
  [[ "$err" == *"$want"* ]] || fail "stderr '$err' lacks '$want'"
  echo "ok (exit $rc): $err"
}

# No temporary or partial output in a directory.
expect_clean() {
  if ls -a "$1" | grep -q '\.tmp\.\|\.old\.'; then fail "leftover temporary files in $1: $(ls -a "$1")"; fi
}
