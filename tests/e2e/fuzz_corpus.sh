# tests/e2e/fuzz_corpus.sh: inputs of the fuzz corpus (tests/fuzz/corpus), given to the commands
# that read such files, end in a result or in one line on stderr with exit 1 or 2: never exit 3
# (internal error), a signal, or a stack trace (issue 16). Every 20th input of each target (sorted
# by name) and the hand-written seeds: `slm` takes ~0.85 s to load LibTorch, so all ~400 would
# cost minutes of CI; the fuzz.parsers test runs every input in-process, where any exception
# other than UserError (the one that becomes exit 3) is a finding.
source "$(dirname "$0")/lib.sh"
CORPUS=$(cd "$(dirname "$0")/../fuzz/corpus" && pwd)
cd "$WORK"
n=0
sample() { ls "$CORPUS/$1" | awk -v d="$CORPUS/$1" 'NR % 20 == 1 || length($0) != 40 {print d "/" $0}'; }
check() {  # what cmd...: exit 0, or 1/2 with one stderr line
  local what=$1 err rc=0; shift
  err=$("$@" 2>&1 >/dev/null) || rc=$?
  n=$((n + 1))
  [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ] || [ "$rc" -eq 2 ] || fail "$what: exit $rc: $err"
  [ "$rc" -eq 0 ] || [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "$what: more than one line: $err"
  [[ "$err" != *"internal error"* ]] || fail "$what: $err"
}
for f in $(sample fuzz_toml); do
  check "plan check $f" "$SLM" plan check "$f" --world 8 --set model.n_layer=4 --set model.vocab_size=512
  check "train -c $f" "$SLM" train -c "$f" --set data.dir=nowhere
done
for f in $(sample fuzz_data); do
  rm -rf ds && mkdir ds && cp "$f" ds/manifest.json
  check "data info (manifest $f)" "$SLM" data info ds
  check "tokenizer decode --shard $f" "$SLM" tokenizer decode -t nowhere --shard "$f"
done
for f in $(sample fuzz_tokenizer); do
  rm -rf tok && mkdir tok
  python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); v, _, m = d.partition(b"\0"); open("tok/vocab.json", "wb").write(v); open("tok/merges.txt", "wb").write(m)' "$f"
  check "tokenizer info ($f)" "$SLM" tokenizer info tok --text "hello world"
done
echo "fuzz_corpus: $n commands, all ended cleanly"
