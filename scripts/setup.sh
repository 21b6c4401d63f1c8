#!/usr/bin/env bash
# scripts/setup.sh: one command from a fresh Debian 12 / Ubuntu machine to a working slmtrain.
# Installs the Debian packages the project needs (no-op when present), builds `slm` and the tests,
# then runs the main job on the shipped default corpus (see README.md, "Quick start").
#   scripts/setup.sh            install + build + run the demo
#   scripts/setup.sh --deps     install only
#   scripts/setup.sh --build    install + build, no demo
#   scripts/setup.sh --venv     make (or reuse) the PyPI virtual environment; prints its folder
# Which LibTorch (SLM_TORCH):
#   debian  Debian's libtorch-dev 1.13, CPU; builds into build/
#   pip     PyPI's torch 2.x (CUDA-enabled, runs on CPU too) in a virtual environment made from
#           scripts/requirements-torch.txt and kept in ${XDG_CACHE_HOME:-~/.cache}/slmtrain/
#           venv-<hash of that file>, so re-runs reuse it; builds into build-pip/
#   auto    pip with the active Python when it is a virtual environment or Conda one that has
#           torch, debian otherwise (the default when SLM_TORCH is unset)
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR=$PWD  # relative paths in ccache's keys, as in scripts/test.sh
REQUIREMENTS=scripts/requirements-torch.txt

# Every Debian package the project needs, one per concern.
PACKAGES=(
  cmake ninja-build g++ pkg-config ccache          # build
  patchelf                                          # scripts/bundle.sh: slm for nodes without a compiler
  libtorch-dev libgloo-dev libopenblas0-openmp      # LibTorch (CPU), c10d Gloo headers, OpenMP BLAS
  libpcre2-dev                                      # tokenizer pre-tokenization regex (JIT)
  libcli11-dev nlohmann-json3-dev libfmt-dev        # command line, manifests, formatting
  libtomlplusplus-dev libxxhash-dev                 # configs, checksums / identities
  libssl-dev                                        # the job secret's HMAC (libcrypto)
  libfaiss-dev libsqlite3-dev                       # slm embed / search: vectors, entries, BM25
  libgtest-dev                                      # unit tests
  clang libclang-rt-14-dev                          # fuzz tests (libFuzzer, ASan, UBSan): tests/fuzz
  fortunes                                          # the shipped default corpus
  gnuplot-nox                                       # slm report: loss and throughput plots
  iproute2 iptables libnetfilter-queue-dev          # slm testbed: namespaces, NFQUEUE, slm-delayer
  python3 python3-regex python3-torch python3-venv  # references in tests and benchmarks only
)

install_deps() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# The virtual environment for SLM_TORCH=pip, keyed by the pinned requirements; a half-made one
# (no .complete marker) is made again. Prints its folder.
venv_dir() {
  echo "${XDG_CACHE_HOME:-$HOME/.cache}/slmtrain/venv-$(sha256sum "$REQUIREMENTS" | cut -c1-12)"
}
make_venv() {
  local v; v=$(venv_dir)
  if [ ! -f "$v/.complete" ]; then
    echo "setup: making $v from $REQUIREMENTS (PyPI's torch with CUDA: a few GB, once)" >&2
    rm -rf "$v"
    /usr/bin/python3 -m venv "$v" >&2
    "$v/bin/pip" install -q --upgrade pip >&2
    "$v/bin/pip" install -q -r "$REQUIREMENTS" >&2
    touch "$v/.complete"
  fi
  echo "$v"
}

# The active Python's torch, when it is the user's own (a venv or Conda), not Debian's.
active_python_torch() {
  [ -n "${VIRTUAL_ENV:-}${CONDA_PREFIX:-}" ] || return 1
  python3 -c 'import torch, os, sys; sys.exit(not os.path.isdir(torch.utils.cmake_prefix_path))' 2>/dev/null
}

# Sets TORCH_KIND (debian|pip), BUILD_DIR and CMAKE_TORCH (extra CMake arguments) from SLM_TORCH.
choose_torch() {
  local want=${SLM_TORCH:-auto} py=""
  case "$want" in
    debian) ;;
    pip) py="$(make_venv)/bin/python" ;;
    auto) if active_python_torch; then py=$(command -v python3); fi ;;
    *) echo "setup: SLM_TORCH=$want is not one of debian, pip, auto" >&2; exit 2 ;;
  esac
  TORCH_KIND=debian BUILD_DIR=build CMAKE_TORCH=() WERROR=()
  # With the toolchain scripts/test.sh is run on in CI (g++ 12, Debian's or the pinned PyPI LibTorch),
  # warnings are errors here as there: the same compile commands, so the test command reuses this
  # build instead of compiling it all again (~20 min on 2 cores). Another compiler may warn: not there.
  if [ "$("${CXX:-c++}" -dumpversion 2>/dev/null)" = 12 ] && { [ -z "$py" ] || [ "$want" = pip ]; }; then
    WERROR=(-DSLM_WERROR=ON)
  fi
  if [ -n "$py" ]; then
    TORCH_KIND=pip BUILD_DIR=build-pip
    CMAKE_TORCH=(-DCMAKE_PREFIX_PATH="$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)')"
                 -DSLM_PYTHON="$py")
  fi
}

build() {
  choose_torch
  echo "setup: building against the $TORCH_KIND LibTorch into $BUILD_DIR/"
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "${CMAKE_TORCH[@]}" "${WERROR[@]}" >/dev/null
  cmake --build "$BUILD_DIR" -j "$(nproc)"
}

demo() {
  # The main job at this stage: train a tokenizer on the default corpus, prepare token shards,
  # pretrain a tiny GPT-2 on them.
  local corpus=/usr/share/games/fortunes out=runs/demo slm=$BUILD_DIR/slm
  mkdir -p "$out"
  $slm tokenizer train "$corpus" --vocab-size 4096 --separator '\n%\n' --out "$out/tokenizer" --force
  $slm data prepare "$corpus" --tokenizer "$out/tokenizer" --separator '\n%\n' \
    --val-fraction 0.05 --out "$out/data" --force
  $slm data info "$out/data"
  # A short pretraining run of the tiny preset (about two minutes on 2 cores); re-running setup
  # resumes it (a finished run is left as it is).
  $slm train -c configs/tiny.toml --set data.dir="$out/data" --set run.dir="$out/train" \
    --set schedule.max_steps=60 --set schedule.warmup_steps=10 --set eval.every=20 --resume
}

case "${1:-}" in
  --deps) install_deps ;;
  --build) install_deps; build ;;
  --venv) install_deps; make_venv ;;
  "") install_deps; build; demo ;;
  *) echo "usage: scripts/setup.sh [--deps|--build|--venv]" >&2; exit 2 ;;
esac
