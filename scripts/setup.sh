#!/usr/bin/env bash
# scripts/setup.sh: one command from a fresh Debian 12 / Ubuntu machine to a working slmtrain.
# Installs the Debian packages the project needs (no-op when present), builds `slm` and the tests,
# then runs the main job on the shipped default corpus (see README.md, "Quick start").
#   scripts/setup.sh            install + build + run the demo
#   scripts/setup.sh --deps     install only
#   scripts/setup.sh --build    install + build, no demo
set -euo pipefail
cd "$(dirname "$0")/.."

# Every Debian package the project needs, one per concern.
PACKAGES=(
  cmake ninja-build g++ pkg-config ccache          # build
  libtorch-dev libgloo-dev libopenblas0-openmp      # LibTorch (CPU), c10d Gloo headers, OpenMP BLAS
  libpcre2-dev                                      # tokenizer pre-tokenization regex (JIT)
  libcli11-dev nlohmann-json3-dev libfmt-dev        # command line, manifests, formatting
  libtomlplusplus-dev libxxhash-dev                 # configs, checksums / identities
  libgtest-dev                                      # unit tests
  fortunes                                          # the shipped default corpus
  gnuplot-nox                                       # slm report: loss and throughput plots
  iproute2 iptables libnetfilter-queue-dev          # slm testbed: namespaces, NFQUEUE, slm-delayer
  python3 python3-regex python3-torch               # references in tests and benchmarks only
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

build() {
  local jobs; jobs=$(nproc)
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j "$jobs"
}

demo() {
  # The main job at this stage: train a tokenizer on the default corpus, prepare token shards,
  # pretrain a tiny GPT-2 on them.
  local corpus=/usr/share/games/fortunes out=runs/demo
  mkdir -p "$out"
  build/slm tokenizer train "$corpus" --vocab-size 4096 --separator '\n%\n' --out "$out/tokenizer" --force
  build/slm data prepare "$corpus" --tokenizer "$out/tokenizer" --separator '\n%\n' \
    --val-fraction 0.05 --out "$out/data" --force
  build/slm data info "$out/data"
  # A short pretraining run of the tiny preset (about two minutes on 2 cores); re-running setup
  # resumes it (a finished run is left as it is).
  build/slm train -c configs/tiny.toml --set data.dir="$out/data" --set run.dir="$out/train" \
    --set schedule.max_steps=60 --set schedule.warmup_steps=10 --set eval.every=20 --resume
}

case "${1:-}" in
  --deps) install_deps ;;
  --build) install_deps; build ;;
  "") install_deps; build; demo ;;
  *) echo "usage: scripts/setup.sh [--deps|--build]" >&2; exit 2 ;;
esac
