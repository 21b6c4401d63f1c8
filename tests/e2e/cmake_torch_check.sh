# tests/e2e/cmake_torch_check.sh: configuring against an unusable LibTorch stops with one clear
# CMake error: one older than 1.13, and one without c10d (distributed) headers. Each is a fake
# Torch package found first through CMAKE_PREFIX_PATH. (A configure that succeeds prints no
# such error, so the greps fail.)
source "$(dirname "$0")/lib.sh"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
fake_torch() {  # dir version
  mkdir -p "$1/share/cmake/Torch" "$1/include"
  printf 'set(PACKAGE_VERSION "%s")\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n' "$2" > "$1/share/cmake/Torch/TorchConfigVersion.cmake"
  printf 'set(Torch_FOUND TRUE)\nset(TORCH_INCLUDE_DIRS "%s/include")\nset(TORCH_LIBRARIES "")\nset(TORCH_CXX_FLAGS "")\n' "$1" \
    > "$1/share/cmake/Torch/TorchConfig.cmake"
}
configure() {  # prefix -> cmake's output on one line (CMake wraps its messages)
  cmake -S "$SRC" -B "$WORK/b$RANDOM" -DCMAKE_PREFIX_PATH="$1" -DBUILD_TESTING=OFF 2>&1 | tr -s ' \n' '  ' || true
}
fake_torch "$WORK/old" 1.12.1
out=$(configure "$WORK/old")
grep -q "LibTorch 1.12.1 (.*) is older than 1.13: install libtorch-dev" <<< "$out" || fail "old LibTorch not named: $out"
fake_torch "$WORK/noc10d" 2.5.0
out=$(configure "$WORK/noc10d")
grep -q "has no c10d (torch/csrc/distributed/c10d/ProcessGroupGloo.hpp)" <<< "$out" || fail "missing c10d not named: $out"
echo "cmake torch check: ok"
