#!/usr/bin/env bash
# scripts/test.sh: the whole test suite, from a fresh clone, on both LibTorch builds: installs
# missing Debian packages and makes (or reuses) the PyPI virtual environment (scripts/setup.sh
# --deps, --venv), then
#   1. Debian's LibTorch 1.13 in build/: builds everything, runs every CTest test but the one
#      that belongs to the second build (cross_build; torchrun checks that 1.13 refuses torchrun
#      2.x's agent store in one line);
#   2. PyPI's LibTorch 2.x in build-pip/: builds everything but the bench programs, runs every unit test and every
#      layout's loss-match test, the ecosystem tests and the cross-build checkpoint test (against
#      build/slm); the testbed (and link-fault), job-secret, planner and WAN-collective tests
#      (~5 min; the c10d calls they make are the ones the other tests make), DiLoCo and the elastic
#      restarts (~3.3 min: all-reduces, and the TCPStore and lost peers that dist_failures and
#      restarts test on both builds), the README's tour (docs_tour) and the fuzz tests
#      (tests/fuzz: clang; the corpus CLI run) run
#      in the first build only, to keep CI under 40 min.
# Tests that need ../shared/data skip cleanly without it. .ci/run calls exactly this.
# SLM_TEST_BUILDS=debian (or pip) runs one build only.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR=$PWD  # relative paths in ccache's keys: clones elsewhere hit the same cache
bash scripts/setup.sh --deps
venv=$(bash scripts/setup.sh --venv)
py=$venv/bin/python
jobs=$(nproc)
builds=${SLM_TEST_BUILDS:-debian pip}
configure() {  # configure DIR [extra CMake arguments]
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON -DSLM_WERROR=ON \
    -DSLM_PYTHON="$py" "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}
if [[ " $builds " == *" debian "* ]]; then
  echo "== Debian's LibTorch 1.13 (build/)"
  configure build -DCMAKE_PREFIX_PATH=/usr -DSLM_OTHER_SLM=
  (cd build && ctest -j "$jobs" --output-on-failure --timeout 900 -E '^e2e\.cross_build$')
fi
if [[ " $builds " == *" pip "* ]]; then
  echo "== PyPI's LibTorch $("$py" -c 'import torch; print(torch.__version__)') (build-pip/)"
  other=""; [ -x build/slm ] && other=$PWD/build/slm
  configure build-pip -DCMAKE_PREFIX_PATH="$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)')" \
    -DSLM_OTHER_SLM="$other" -DSLM_BENCH=OFF  # the bench programs compile in the first build
  (cd build-pip && ctest -j "$jobs" --output-on-failure --timeout 900 \
    -E '^(e2e\.(testbed|elastic_testbed|link_faults|job_secret|planner|wan_comm|diloco|elastic|cmake_torch_check|fuzz_corpus|docs_tour)|fuzz\..*)$')
fi
