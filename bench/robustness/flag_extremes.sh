#!/usr/bin/env bash
# bench/robustness/flag_extremes.sh: every numeric command-line option of every command (read from
# `slm CMD --help`: INT, UINT and FLOAT options) at extreme values, one at a time, on small real
# inputs (a tokenizer, a dataset, a 2-step run, indexes, a plan, a cluster and a profile made first):
# what config_extremes.sh does for the training settings, for the other commands' flags. Run it
# with the sanitizer build (`bash scripts/sanitize.sh` makes build-asan/; huge allocations then
# fail as in a plain build: allocator_may_return_null) after adding an option; as root (the testbed
# entry); ~1 h on 2 cores. Prints one line per finding: "BAD CMD --opt=value: SAN (the report's
# first line) | exit N"; exit 1 if any. A value accepted and run with, or refused in one line
# (exit 1 or 2), is fine; so is a run still going after 30 s (a huge count or timeout).
# Usage: SLM=build-asan/slm [CMDS=REGEX] [VERBOSE=1] bench/robustness/flag_extremes.sh [VALUE...]
#   (default values as config_extremes.sh's; CMDS: only the commands it matches, e.g. CMDS='^probe$'; VERBOSE: every run's exit code and command)
set -uo pipefail
SLM=${SLM:-$(cd "$(dirname "$0")/../.." && pwd)/build/slm}
SLM=$(realpath "$SLM")
values=("$@")
[ ${#values[@]} -gt 0 ] || values=(9223372036854775807 -9223372036854775807 1099511627776 -1099511627776
                                   2147483647 -2147483647 -1 0 1048576 16777216 1e308 -1e308)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:detect_container_overflow=0:verify_asan_link_order=0:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
W=$(mktemp -d /tmp/slm_flags_XXXXXX)
trap 'rm -rf "$W"' EXIT
export HOME=$W  # the measurement caches start empty and stay out of the user's
cd "$W"          # and so does any file a command writes by default (profile.json, topology.json)

# The inputs every command reads.
for i in $(seq 400); do printf 'Line %d: the fox %d jumps over the dog.\n' "$i" $((i % 7)); done > "$W/corpus.txt"
# Documents of ~120 tokens, blank-line separated, for the embedding commands' queries and pairs.
for i in $(seq 40); do
  for j in $(seq 12); do printf 'Paragraph %d, line %d: the fox %d jumps over the dog.\n' $i $j $((i * j % 7)); done
  echo
done > "$W/docs.txt"
CFG="-c /dev/null --set data.dir=$W/data --set model.n_layer=2 --set model.n_embd=64 --set model.n_head=2"
CFG+=" --set model.block_size=64 --set batch.batch_size=4 --set batch.micro_batch=2 --set schedule.max_steps=2"
CFG+=" --set schedule.warmup_steps=1 --set eval.every=0 --set checkpoint.every=0 --set system.precision=fp32"
setup() { "$SLM" "$@" > "$W/setup.log" 2>&1 || { cat "$W/setup.log"; echo "setup failed: slm $*"; exit 2; }; }
setup tokenizer train "$W/corpus.txt" --vocab-size 300 --out "$W/tok" -q
setup data prepare "$W/corpus.txt" -t "$W/tok" --separator line --val-fraction 0.1 --out "$W/data" -q
# shellcheck disable=SC2086
setup train $CFG --set run.dir="$W/run"
setup embed "$W/run" "$W/corpus.txt" --separator line --index hnsw --out "$W/hnsw" -q
setup embed "$W/run" "$W/corpus.txt" --separator line --index ivf --out "$W/ivf" -q
# shellcheck disable=SC2086
setup plan make $CFG --world 2 -o "$W/plan.toml"
# shellcheck disable=SC2086
setup launch -n 2 -- "$SLM" profile $CFG --micro-batches 2 -o "$W/profile.json"  # the cluster's 2 ranks
printf '[[site]]\nname = "a"\nranks = 1\n[[site]]\nname = "b"\nranks = 1\n[[link]]\nsites = ["a", "b"]\ndelay_ms = 10\n' \
  > "$W/two.toml"
# A rank command for the launchers: rank 1 fails as a lost peer does (exit 4), rank 0 waits to be stopped.
printf '#!/bin/sh\n[ "$RANK" = 1 ] && exit 4\nsleep 5\n' > "$W/rank.sh" && chmod +x "$W/rank.sh"

# One entry per command: the command whose --help lists the options | the invocation, @ where the
# option goes (a base option of the same name is dropped) | exit codes that are the command's own
# answer here (the launchers pass rank 1's 4 on).
entries=(
  "tokenizer train|tokenizer train $W/corpus.txt --out $W/o_tok --force -q @|"
  "data prepare|data prepare $W/corpus.txt -t $W/tok --separator line --out $W/o_data --force -q @|"
  "tokenizer decode|tokenizer decode -t $W/tok --shard $W/data/train_000000.bin --count 8 @|"
  "generate|generate $W/run --max-tokens 4 @|"
  "eval|eval $W/run --batches 2 @|"
  "embed|embed $W/run $W/corpus.txt --separator line --index hnsw --out $W/o_hnsw --force -q @|"
  "embed|embed $W/run $W/corpus.txt --separator line --index ivf --out $W/o_ivf --force -q @|"
  "embed eval|embed eval $W/run $W/docs.txt --separator blank --max-docs 40 @|"
  "embed tune|embed tune $W/run $W/docs.txt --separator blank -o $W/o_tune --steps 2 --batch 4 --warmup 1 @|"
  "search|search $W/hnsw fox @|"
  "search|search $W/ivf fox @|"
  "plan make|plan make $CFG --world 2 @|"
  "plan check|plan check $W/plan.toml $CFG --world 2 @|"
  "plan auto|plan auto $CFG --cluster $W/two.toml --profile $W/profile.json --all-ranks @|"
  "profile|profile $CFG --micro-batches 2 --no-cache -o $W/o_profile.json @|"
  "probe|launch -n 2 -- $SLM probe -o $W/o_topo.json --repeats 1 --no-collectives @|"
  "launch|launch @ --nproc 2 -- $W/rank.sh|4"
  "testbed run|testbed run $W/two.toml @ -- $W/rank.sh|4"
)

# The numeric options of a command: "--name" or "-x" where the help has no long name.
numeric_options() {
  "$SLM" $1 --help | sed -nE 's/^ +(-[a-zA-Z],)?(--[a-z0-9-]+|-[a-zA-Z]) (INT|UINT|FLOAT)\b.*/\2/p'
}

found=0 runs=0
for e in "${entries[@]}"; do
  IFS='|' read -r cmd base own <<< "$e"
  [[ "$cmd" =~ ${CMDS:-.} ]] || continue
  for opt in $(numeric_options "$cmd"); do
    for v in "${values[@]}"; do
      args=() skip=0
      for word in $base; do
        if [ $skip = 1 ]; then skip=0; continue; fi
        if [ "$word" = "$opt" ]; then skip=1; continue; fi
        if [ "$word" != "@" ]; then args+=("$word")
        elif [[ "$opt" == --* ]]; then args+=("$opt=$v")  # = keeps a negative value the option's
        else args+=("$opt" "$v"); fi
      done
      rm -rf "$W"/o_*
      timeout -k 5 30 "$SLM" "${args[@]}" > "$W/out.txt" 2>&1
      rc=$? runs=$((runs + 1))
      [ "$cmd" != "testbed run" ] || "$SLM" testbed down "$W/two.toml" > /dev/null 2>&1
      what=""
      if grep -q "runtime error\|AddressSanitizer\|LeakSanitizer" "$W/out.txt"; then
        what="SAN ($(grep -m1 "runtime error\|ERROR: " "$W/out.txt" | cut -c1-200))"
      elif [ $rc -ge 3 ] && [ $rc -ne 124 ] && [ $rc -ne 137 ] && [[ ",$own," != *",$rc,"* ]]; then
        what="exit $rc ($(grep -m1 "slm.*: \|rror" "$W/out.txt" | cut -c1-200))"
      fi
      [ -z "${VERBOSE:-}" ] || echo "exit $rc: slm ${args[*]}"
      [ -z "$what" ] || { echo "BAD $cmd $opt=$v: $what"; found=1; }
    done
  done
done
# A launcher killed by the timeout leaves no testbed behind (`slm testbed down` for a stray one).
"$SLM" testbed down "$W/two.toml" > /dev/null 2>&1 || true
echo "checked $runs runs (${#values[@]} values per option)"
exit $found
