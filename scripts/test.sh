#!/usr/bin/env bash
# scripts/test.sh: the whole test suite, from a fresh clone: installs missing Debian packages
# (scripts/setup.sh --deps), builds everything, runs CTest (unit, torch-facing and end-to-end
# tests). Tests that need ../shared/data skip cleanly without it. .ci/run calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --deps
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON -DSLM_WERROR=ON >/dev/null
cmake --build build -j "$(nproc)"
cd build
ctest -j "$(nproc)" --output-on-failure --timeout 900
