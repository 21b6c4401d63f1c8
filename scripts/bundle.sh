#!/usr/bin/env bash
# scripts/bundle.sh: slm for a cluster node that has PyTorch but no compiler and no internet (a
# FABRIC VM, an air-gapped cluster). Builds slm against a given PyTorch here, then packs the binary
# with every library it needs that is neither LibTorch's (the node's torch provides those) nor the C
# library's, and a launcher that finds the node's torch and checks it is the same version:
#   scripts/bundle.sh --torch PYTHON|VERSION [--out DIR] [--slm BINARY] [--tests]
#     --torch  a Python whose torch to build against (e.g. a venv's bin/python), or a version such
#              as 2.11.0 (a virtual environment with that torch is made here, once, in the cache)
#     --out    where the bundle goes (default: dist/); it is DIR/slm-<torch version>/ and a .tar.gz
#     --slm    pack this already built slm instead of building one (it must be built against
#              --torch's LibTorch)
#     --tests  also build and pack the LibTorch unit tests (bin/slm_torch_tests: the CUDA kernels'
#              tests against ATen, for a GPU node; bench/gpu/gpu_kernels.sh takes SLM_BUNDLE)
# On the node: tar xzf slm-*.tar.gz; slm-*/bin/slm --version (it asks `python3 -c "import torch"`
# where torch is; SLM_TORCH_PYTHON names another Python, SLM_TORCH_LIB the lib folder itself).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
torch="" out=dist slm="" tests=0
while [ $# -gt 0 ]; do
  case "$1" in
    --torch) torch=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --slm) slm=$2; shift 2 ;;
    --tests) tests=1; shift ;;
    *) echo "usage: scripts/bundle.sh --torch PYTHON|VERSION [--out DIR] [--slm BINARY] [--tests]" >&2; exit 2 ;;
  esac
done
[ -n "$torch" ] || { echo "bundle: give --torch PYTHON or --torch VERSION" >&2; exit 2; }
out=$(realpath -sm "$out")  # paths as given from here (links kept: a venv's python is one), the build from the repository
[ -z "$slm" ] || slm=$(realpath -s "$slm")
[[ "$torch" == */* ]] && torch=$(realpath -sm "$torch")
cd "$root"
command -v patchelf >/dev/null || { echo "bundle: patchelf is missing (apt-get install patchelf)" >&2; exit 1; }

# The Python with that torch.
if [[ "$torch" =~ ^[0-9]+\.[0-9]+(\.[0-9]+)?$ ]]; then
  venv="${XDG_CACHE_HOME:-$HOME/.cache}/slmtrain/bundle-torch-$torch"
  if [ ! -f "$venv/.complete" ]; then
    rm -rf "$venv" && /usr/bin/python3 -m venv "$venv" && "$venv/bin/pip" install -q "torch==$torch" && touch "$venv/.complete"
  fi
  py=$venv/bin/python
else
  py=$torch
fi
version=$("$py" -c 'import torch; print(torch.__version__)') || { echo "bundle: $py has no torch" >&2; exit 1; }
torch_lib=$("$py" -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
site=$(dirname "$(dirname "$torch_lib")")  # site-packages: the nvidia-* wheels' libraries are under it

# Build, unless given a binary.
build=build-bundle-$version
if [ -z "$slm" ] || [ "$tests" = 1 ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=$([ "$tests" = 1 ] && echo ON || echo OFF) \
    -DSLM_BENCH=OFF -DCMAKE_PREFIX_PATH="$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)')" >/dev/null
  cmake --build "$build" -j "$(nproc)" --target $([ -z "$slm" ] && echo slm) $([ "$tests" = 1 ] && echo slm_torch_tests)
  [ -n "$slm" ] || slm=$build/slm
fi

# pack BINARY NAME: the binary as bin/NAME.real, beside it in lib/ the libraries it loads but
# LibTorch's (the node has them) and the C library's (every Linux has it).
system='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libutil)\.so'
pack() {
  cp "$1" "$dir/bin/$2.real"
  patchelf --remove-rpath "$dir/bin/$2.real"  # the build machine's paths mean nothing on the node
  LD_LIBRARY_PATH="$torch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$1" | while read -r name _ path _; do
    [ -n "${path:-}" ] && [ -f "$path" ] || continue
    case "$path" in "$site"/*) continue ;; esac  # torch's and the nvidia-* wheels'
    [[ "$name" =~ $system ]] && continue
    cp -L "$path" "$dir/lib/$name"
  done
  cp "$dir/bin/launcher" "$dir/bin/$2"
}
dir=$out/slm-$version
rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/lib"
echo "$version" > "$dir/TORCH_VERSION"
cat > "$dir/bin/launcher" <<'SH'
#!/bin/sh
# A program of a bundle (scripts/bundle.sh; bin/NAME runs bin/NAME.real): its own libraries, then
# the torch of this node.
here=$(cd "$(dirname "$0")/.." && pwd)
want=$(cat "$here/TORCH_VERSION")
if [ -z "${SLM_TORCH_LIB:-}" ]; then
  py=${SLM_TORCH_PYTHON:-python3}
  found=$("$py" -c 'import torch, os; print(torch.__version__, os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null) \
    || { echo "slm: error: no torch in $py (this slm needs torch $want; set SLM_TORCH_PYTHON or SLM_TORCH_LIB)" >&2; exit 1; }
  have=${found%% *}
  [ "$have" = "$want" ] || { echo "slm: error: $py has torch $have; this slm was built against torch $want" >&2; exit 1; }
  SLM_TORCH_LIB=${found#* }
fi
extra=""
for d in "$SLM_TORCH_LIB"/../../nvidia/*/lib "$SLM_TORCH_LIB"/../../nvidia/*/*/lib; do [ -d "$d" ] && extra="$extra:$d"; done
LD_LIBRARY_PATH="$here/lib:$SLM_TORCH_LIB$extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$0.real" "$@"
SH
chmod +x "$dir/bin/launcher"
pack "$slm" slm
[ "$tests" = 0 ] || pack "$build/tests/slm_torch_tests" slm_torch_tests
rm "$dir/bin/launcher"
tar -C "$out" -czf "$out/slm-$version.tar.gz" "slm-$version"
echo "bundle: $dir ($(ls "$dir/lib" | wc -l) libraries beside slm; torch $version) and $out/slm-$version.tar.gz"
