# tests/e2e/cli_errors.sh: bad input gives one clear line and a non-zero exit, never a crash,
# a hang or partial output (issue 2, "Bad input").
source "$(dirname "$0")/lib.sh"
cd "$WORK"
printf 'hello world\n\nsecond document here\n\nthird one, the last\n' > corpus.txt
"$SLM" tokenizer train corpus.txt --vocab-size 300 --out tok -q >/dev/null
"$SLM" tokenizer train corpus.txt --vocab-size 300 --special '<|x|>' --out tok2 -q >/dev/null
"$SLM" data prepare corpus.txt -t tok --separator blank --val-fraction 0.34 --out ds -q >/dev/null

"$SLM" --help | grep -q tokenizer || fail "slm --help"
"$SLM" data prepare --help | grep -q -- '--val-fraction FLOAT=0.05' || fail "defaults in help"
expect_error "nope.txt: no such file or directory" "$SLM" tokenizer train nope.txt --out t1
: > empty.txt
expect_error "corpus is empty" "$SLM" tokenizer train empty.txt --out t1
expect_error "vocab size 100 is smaller than 256 bytes + 1 special tokens" \
  "$SLM" tokenizer train corpus.txt --vocab-size 100 --out t1
expect_error "tok: already exists (pass --force" "$SLM" tokenizer train corpus.txt --out tok -q
expect_error "missing: tokenizer directory not found" \
  "$SLM" data prepare corpus.txt -t missing --out d1
printf '{"text": "a"}\n{oops\n' > bad.jsonl
expect_error "bad.jsonl:2: not valid JSON" "$SLM" data prepare bad.jsonl -t tok --out d1
expect_error "has no special token \"<|endoftext|>\"" "$SLM" data prepare corpus.txt -t tok2 --out d1
expect_error "--val-fraction 0.9 is outside" \
  "$SLM" data prepare corpus.txt -t tok --separator blank --val-fraction 0.9 --out d1
[ ! -e t1 ] && [ ! -e d1 ] || fail "partial output left after errors"
expect_clean .

cp -r ds bad_magic && printf 'XXXX' | dd of=bad_magic/train_000000.bin conv=notrunc status=none
expect_error "train_000000.bin: not a token shard: bad magic" "$SLM" data info bad_magic
cp -r ds truncated && truncate -s -1 truncated/val_000000.bin
expect_error "val_000000.bin: corrupt shard: header says" "$SLM" data info truncated
cp -r ds bad_ids && printf '\xff\xff' | dd of=bad_ids/train_000000.bin bs=1 seek=1030 conv=notrunc status=none
expect_error "train_000000.bin: corrupt shard: token 65535 at position 3 is outside the vocabulary" \
  "$SLM" data info bad_ids
expect_error "prepared with a different tokenizer" "$SLM" data info ds -t tok2
expect_error "no-such-ds: dataset directory not found" "$SLM" data info no-such-ds
echo '{"format": "slmtrain-dataset", "version": 1}' > ds/manifest.json
expect_error "malformed manifest" "$SLM" data info ds
printf '12 abc\n' > ids.txt
expect_error "\"abc\" is not a token id" "$SLM" tokenizer decode -t tok ids.txt
echo 999999 | expect_error "token id 999999 is not in the vocabulary" "$SLM" tokenizer decode -t tok

# Interrupted preparation (Ctrl-C: one SIGINT, 1.5 s in, while it reads or encodes 26 MB) leaves
# either nothing or the complete dataset, never a partial one. (Not `slm ... &` and `kill -INT` 0.3 s
# in: a shell without job control starts background commands with SIGINT ignored, which holds until
# slm installs its handler, and slm was still starting: the signal was lost and the run finished.)
for i in $(seq 400); do cat corpus.txt; done > big.txt
for i in $(seq 240); do cat big.txt big.txt big.txt big.txt big.txt; done > bigger.txt
rc=0
timeout --foreground -s INT 1.5 "$SLM" data prepare bigger.txt big.txt -t tok --separator blank --out int -q \
  --threads 1 2> int.err || rc=$?
if [ -e int ]; then
  "$SLM" data info int >/dev/null || fail "interrupted run left a broken dataset"
  echo "ok: finished before the signal (rc=$rc)"
else
  [ "$rc" -ne 0 ] || fail "interrupted run exited 0 without output"
  echo "ok: interrupted (rc=$rc), no output: $(cat int.err)"
fi
expect_clean .

# Sampling and eval options out of range (issue 16, cases 2, 3 and 17): one line, before any work.
expect_error "--top-p 0 must be in (0, 1]" "$SLM" generate nowhere --top-p 0
expect_error "--top-p 1.5 must be in (0, 1]" "$SLM" generate nowhere --top-p 1.5
expect_error "--temperature: must be a finite number (got nan)" "$SLM" generate nowhere --temperature nan
expect_error "--temperature -1 must be a finite number" "$SLM" generate nowhere --temperature -1
expect_error "--top-k -5 must be at least 0" "$SLM" generate nowhere --top-k -5
expect_error "--max-tokens -1 must be at least 0" "$SLM" generate nowhere -n -1
expect_error "--batches 0 must be at least 1" "$SLM" eval nowhere --batches 0
expect_error "--micro-batch -1 must be at least 1" "$SLM" eval nowhere --micro-batch -1
# A text file with one stray NUL byte is skipped as binary, and named in a warning (it was skipped
# silently while the corpus had other text).
mkdir -p mixed && printf 'hello world\n\nsecond document here\n' > mixed/a.txt && printf 'a stray \0 byte\n' > mixed/b.txt
err=$("$SLM" tokenizer train mixed --vocab-size 300 --out tnul -q 2>&1 >/dev/null) || fail "a folder with a NUL-byte file: $err"
[[ "$err" == *"warning: skipped 1 file(s) that look binary (a NUL byte in the first 64 KiB): mixed/b.txt"* ]] \
  || fail "the skipped file was not named: $err"
echo "ok: a skipped binary file is named"
# More ranks than the global batch has sequences: one line (it was "micro_batches 0 must be >= 1").
printf 'name = "big"\n[[site]]\nname = "a"\nranks = 10000\n' > big.toml
expect_error "plan auto: the global batch 32 is smaller than the 10000 ranks" "$SLM" plan auto --cluster big.toml --objective time
echo "cli_errors: all passed"
