#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS [OUT]: builds the fuzz targets (fuzz_*.cpp) with clang's libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer over slm_core's sources (the list is read from
# CMakeLists.txt), then runs each for SECONDS starting from its corpus in tests/fuzz/corpus/<target>
# (kept in the repository; inputs that reach new code are written to OUT/new/<target>; copy good
# ones back). A crash, a sanitizer report or an exception other than UserError fails the run and
# leaves the input in OUT/crash-*. Exit 77 (skip) without clang. Object files are cached in OUT.
# SLM_FUZZ_SEED (default 1) fixes libFuzzer's seed, so CI explores the same inputs each run and a
# failure there is a regression; SLM_FUZZ_SEED=0 draws a new seed (longer hunts for new bugs:
# `SLM_FUZZ_SEED=0 bash tests/fuzz/run.sh 300 /tmp/fuzz`; add what it finds to the corpus).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secs=${1:-60}
out=${2:-$root/build-fuzz}
command -v clang++ >/dev/null || { echo "SKIP: clang++ not installed (scripts/setup.sh --deps installs it)"; exit 77; }
cc="clang++"
command -v ccache >/dev/null && cc="ccache clang++"
# -fdebug-prefix-map: paths in the debug info relative to the clone, so that ccache (which hashes the
# working directory where debug info names it) hits from a clone in another folder too.
flags=(-std=c++17 -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
       -fdebug-prefix-map="$root"=. -I"$root/src" -I"$here" -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1)
mkdir -p "$out/obj" "$out/new"
sources=$(sed -n '/^add_library(slm_core STATIC/,/)/p' "$root/CMakeLists.txt" | grep -o 'src/[A-Za-z0-9_/]*\.cpp')
export CCACHE_BASEDIR=$root
printf '%s\n' $sources | xargs -P "$(nproc)" -I{} sh -c \
  'o="$0/obj/$(echo {} | tr / _).o"; '"$cc"' '"${flags[*]}"' -fsanitize=fuzzer-no-link -c "$1/{}" -o "$o"' "$out" "$root"
objs=$(for s in $sources; do echo "$out/obj/$(echo "$s" | tr / _).o"; done)
libs=(-lfmt -lpcre2-8 -lxxhash -ltomlplusplus -lcrypto -lpthread)
status=0
for src in "$here"/fuzz_*.cpp; do
  t=$(basename "$src" .cpp)
  $cc "${flags[@]}" -fsanitize=fuzzer "$src" $objs "${libs[@]}" -o "$out/$t"
  mkdir -p "$out/new/$t"
  echo "== $t: ${secs} s from tests/fuzz/corpus/$t ($(ls "$here/corpus/$t" | wc -l) inputs)"
  # max_len 4096: files of a few KB reach every parser's branches; leaks are checked too.
  rc=0
  (cd "$out" && UBSAN_OPTIONS=print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
     "./$t" -seed="${SLM_FUZZ_SEED:-1}" -max_total_time="$secs" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
     "new/$t" "$here/corpus/$t" > "$t.log" 2>&1) || rc=$?
  grep -E "^Done [0-9]+ runs" "$out/$t.log" || true
  if [ "$rc" -ne 0 ]; then
    grep -E -A30 "^==[0-9]+==|runtime error|uncaught exception|deadly signal" "$out/$t.log" | head -60
    echo "FAIL: $t (exit $rc); input kept in $out: $(cd "$out" && ls crash-* leak-* timeout-* oom-* 2>/dev/null | head -3)"
    status=1
  fi
done
exit $status
