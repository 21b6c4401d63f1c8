# tests/e2e/train_resume.sh: `slm train` end to end on real text (tinyshakespeare when ../shared is
# there, else the fortunes corpus, else generated text): the loss goes down; 2N straight steps and
# N steps + --resume + N steps give bit-identical losses; a corrupt newest checkpoint is skipped
# with a warning and the run still reproduces the straight losses; a mix of two datasets resumes
# bit-identically too; bad configs, a checkpoint of another model and data of another tokenizer
# give one-line errors.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
corpus=$(real_corpus)
make_dataset "$corpus" 512 0.02
COMMON=(--set data.dir=data "${TINY_MODEL[@]}"
        --set batch.batch_size=8 --set batch.micro_batch=4
        --set optim.lr=3e-3 --set schedule.warmup_steps=4 --set system.threads=2
        --set eval.every=10 --set eval.batches=4 --set log.every=10
        --set system.precision=fp32)  # slm eval runs in fp32: auto may pick bf16 (AMX CPUs do here)
losses() { python3 -c "
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '\"loss\"' in l]
print(' '.join(repr(r['loss']) for r in rows if r['step'] > int(sys.argv[2])))" "$1" "$2"; }

# 1. A few dozen steps: the loss goes down.
"$SLM" train -c /dev/null "${COMMON[@]}" --set schedule.max_steps=40 --set run.dir=r40 2> r40.log \
  || { cat r40.log; fail "training failed"; }
python3 - r40/metrics.jsonl <<'PY' || fail "loss did not go down"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
train = [r["loss"] for r in rows if "loss" in r]
val = [r["val_loss"] for r in rows if "val_loss" in r]
first, last = sum(train[:3]) / 3, sum(train[-3:]) / 3
print(f"loss {first:.3f} -> {last:.3f}; val {val[0]:.3f} -> {val[-1]:.3f}")
assert len(train) == 40 and last < first - 0.5 and val[-1] < val[0]
PY
[ -f r40/config.toml ] && [ -d r40/checkpoints/step_00000040 ] || fail "run folder contents"
# slm eval reproduces the run's last validation loss; slm generate is deterministic per seed.
want=$(python3 -c "
import json; print('%.4f' % [json.loads(l) for l in open('r40/metrics.jsonl') if 'val_loss' in l][-1]['val_loss'])")
"$SLM" eval r40 --batches 4 --micro-batch 4 | grep -q "loss $want," || fail "slm eval != final val_loss $want"
"$SLM" eval r40 --text "$corpus" --batches 2 | grep -q "perplexity" || [ -d "$corpus" ] || fail "eval --text"
g1=$("$SLM" generate r40 -p "The" -n 20 --seed 5 --top-k 20 --top-p 0.9); g2=$("$SLM" generate r40 -p "The" -n 20 --seed 5 --top-k 20 --top-p 0.9)
[ "$g1" = "$g2" ] && [[ "$g1" == The* ]] || fail "generate not deterministic: [$g1] vs [$g2]"
"$SLM" generate r40 -n 5 --temperature 0 >/dev/null || fail "greedy generate"
echo "ok: eval matches the final val_loss ($want); generate deterministic"
"$SLM" report r40 > report.txt || fail "slm report"
grep -q "best validation loss" report.txt && grep -q "median MFU | [0-9.]*%" report.txt && grep -q "time per step (median) | [0-9.]* s in the step (step_s), [0-9.]* s from" report.txt || { cat report.txt; fail "report table"; }
for f in loss.svg loss.png throughput.svg throughput.png summary.md; do [ -s r40/report/$f ] || fail "report lacks $f"; done
expect_error "no-run/metrics.jsonl: not found" "$SLM" report no-run

# 2. Exact resume: 12 straight vs 6 + resume + 6 (same schedule).
"$SLM" train -c /dev/null "${COMMON[@]}" --set schedule.max_steps=12 --set run.dir=straight 2>/dev/null
"$SLM" train -c /dev/null "${COMMON[@]}" --set schedule.max_steps=12 --set run.dir=split --stop-at 6 2>/dev/null
[ -d split/checkpoints/step_00000006 ] || fail "no checkpoint at --stop-at"
expect_error "split: has checkpoints; pass --resume" \
  "$SLM" train -c /dev/null "${COMMON[@]}" --set schedule.max_steps=12 --set run.dir=split
"$SLM" train -c /dev/null "${COMMON[@]}" --set schedule.max_steps=12 --set run.dir=split --resume 2> resume.log
grep -q "resumed from split/checkpoints/step_00000006 at step 6" resume.log || { cat resume.log; fail "resume message"; }
a=$(losses straight/metrics.jsonl 6); b=$(losses split/metrics.jsonl 6)
[ -n "$a" ] && [ "$a" = "$b" ] || fail "resumed losses differ: straight [$a] vs resumed [$b]"
echo "ok: steps 7-12 bit-identical after resume: $a"

# 2b. Dropout draws from a generator seeded by system.seed: two runs give the same losses, and a
# resume continues its stream (its state is in the checkpoint).
DROP=(--set model.dropout=0.1 --set schedule.max_steps=12)
"$SLM" train -c /dev/null "${COMMON[@]}" "${DROP[@]}" --set run.dir=drop1 2>/dev/null
"$SLM" train -c /dev/null "${COMMON[@]}" "${DROP[@]}" --set run.dir=drop2 --stop-at 6 2>/dev/null
"$SLM" train -c /dev/null "${COMMON[@]}" "${DROP[@]}" --set run.dir=drop2 --resume 2>/dev/null
d1=$(losses drop1/metrics.jsonl 0); d2=$(losses drop2/metrics.jsonl 0)
[ -n "$d1" ] && [ "$d1" = "$d2" ] || fail "dropout: runs differ: [$d1] vs [$d2]"
echo "ok: dropout runs reproducible, also across a resume"

# 2c. A mix of datasets (data.mix): a second dataset made with the same tokenizer takes 30% of the
# training samples; the losses differ from the run without it, and a resume reproduces them; each
# dataset's validation loss is logged, printed, reported and given again by slm eval.
tac "$corpus" > other.txt
"$SLM" data prepare other.txt -t tok --separator blank --val-fraction 0.02 --out datab -q >/dev/null
MIX=(--set data.mix="datab=0.3" --set schedule.max_steps=12)
"$SLM" train -c /dev/null "${COMMON[@]}" "${MIX[@]}" --set run.dir=mix1 2> mix1.log || { cat mix1.log; fail "mix"; }
grep -q "^data: a mix, each epoch's [0-9]* samples from data 70.0%, datab 30.0%" mix1.log || { cat mix1.log; fail "mix header"; }
"$SLM" train -c /dev/null "${COMMON[@]}" "${MIX[@]}" --set run.dir=mix2 --stop-at 6 2>/dev/null
"$SLM" train -c /dev/null "${COMMON[@]}" "${MIX[@]}" --set run.dir=mix2 --resume 2>/dev/null
m1=$(losses mix1/metrics.jsonl 6); m2=$(losses mix2/metrics.jsonl 6)
[ -n "$m1" ] && [ "$m1" = "$m2" ] || fail "mix: resumed losses differ: [$m1] vs [$m2]"
[ "$m1" != "$a" ] || fail "mix: the same losses as without the second dataset"
# Each mixed dataset's validation loss is logged beside data.dir's; slm eval gives both, a line each.
read -r vd vb < <(python3 -c "
import json; r = [json.loads(l) for l in open('mix1/metrics.jsonl') if 'val_loss' in l][-1]
print('%.4f %.4f' % (r['val_loss'], r['val_loss/datab']))") || fail "mix: no val_loss/datab in metrics.jsonl"
[ "$vd" != "$vb" ] || fail "mix: both datasets' validation losses $vd"
grep -q "^step 12: val loss $vd, perplexity [0-9.]*; datab $vb$" mix1.log || { cat mix1.log; fail "mix: validation line"; }
ev=$("$SLM" eval mix1 --batches 4 --micro-batch 4)
grep -q "^eval val split of data: loss $vd," <<<"$ev" && grep -q "^eval val split of datab: loss $vb," <<<"$ev" \
  || { echo "$ev"; fail "mix: slm eval's lines"; }
"$SLM" report mix1 >/dev/null || fail "mix: slm report"
grep -q "| validation loss of datab (data.mix) at step 12 | $vb |" mix1/report/summary.md \
  || { cat mix1/report/summary.md; fail "mix: report"; }
expect_error 'data: mix entry "datab" is not DIR=SHARE' "$SLM" train -c /dev/null "${COMMON[@]}" --set data.mix=datab --set run.dir=e1
echo "ok: a mix of two datasets, bit-identical after resume: $m1; validation data $vd, datab $vb"

# 2d. Warmup-stable-decay: a run stopped in its stable stretch and resumed with a larger max_steps
# trains as one given that max_steps from the start (the stable learning rate does not depend on
# it); the same resume with the default schedule (decay from the end of warmup) does not.
WSD=(--set schedule.decay_ratio=0.5 --set schedule.decay=sqrt)
"$SLM" train -c /dev/null "${COMMON[@]}" "${WSD[@]}" --set schedule.max_steps=16 --set run.dir=wsd16 2>/dev/null
"$SLM" train -c /dev/null "${COMMON[@]}" "${WSD[@]}" --set schedule.max_steps=12 --set run.dir=wsd12 --stop-at 6 2>/dev/null
"$SLM" train -c /dev/null "${COMMON[@]}" "${WSD[@]}" --set schedule.max_steps=16 --set run.dir=wsd12 --resume 2>/dev/null
w16=$(losses wsd16/metrics.jsonl 0); w12=$(losses wsd12/metrics.jsonl 0)
[ -n "$w16" ] && [ "$w16" = "$w12" ] || fail "wsd: extended run's losses differ: [$w12] vs [$w16]"
"$SLM" train -c /dev/null "${COMMON[@]}" --set schedule.max_steps=12 --set run.dir=cos12 --stop-at 6 2>/dev/null
"$SLM" train -c /dev/null "${COMMON[@]}" --set schedule.max_steps=16 --set run.dir=cos12 --resume 2>/dev/null
"$SLM" train -c /dev/null "${COMMON[@]}" --set schedule.max_steps=16 --set run.dir=cos16 2>/dev/null
[ "$(losses cos12/metrics.jsonl 0)" != "$(losses cos16/metrics.jsonl 0)" ] || fail "cosine: extending did not change the losses"
python3 - wsd16/metrics.jsonl <<'PY' || fail "wsd: learning rates"
import json, sys
lr = [json.loads(l)["lr"] for l in open(sys.argv[1]) if '"loss"' in l]
assert len(lr) == 16 and lr[3] == lr[8] == max(lr) and lr[9] < lr[8] and lr[-1] < lr[9], lr  # decay from 8
PY
expect_error "schedule: decay_ratio 2 must be in [0, 1]" \
  "$SLM" train -c /dev/null "${COMMON[@]}" --set schedule.decay_ratio=2 --set run.dir=e1
echo "ok: warmup-stable-decay: stopped at 6 of 12 and resumed to 16 = 16 from the start: $w16"

# 3. Corrupt newest checkpoint: warning, previous one used, same losses.
"$SLM" train -c /dev/null "${COMMON[@]}" --set schedule.max_steps=12 --set checkpoint.every=2 \
  --set run.dir=corrupt --stop-at 6 2>/dev/null
printf 'garbage' | dd of=corrupt/checkpoints/step_00000006/shard_00000.pt bs=1 seek=100 conv=notrunc status=none
"$SLM" train -c /dev/null "${COMMON[@]}" --set schedule.max_steps=12 --set checkpoint.every=2 \
  --set run.dir=corrupt --resume 2> corrupt.log
grep -q "warning: checkpoint corrupt/checkpoints/step_00000006 is corrupt (.*checksum mismatch)" corrupt.log \
  || { cat corrupt.log; fail "no warning for the corrupt checkpoint"; }
grep -q "resumed from corrupt/checkpoints/step_00000004 at step 4" corrupt.log || fail "did not fall back to step 4"
c=$(losses corrupt/metrics.jsonl 6 | awk '{n=NF/2; for(i=NF-5;i<=NF;i++) printf "%s%s", $i, (i<NF?" ":"")}')
[ "$c" = "$a" ] || fail "losses after fallback differ: [$c] vs [$a]"
echo "ok: corrupt newest checkpoint skipped, losses identical"

# 4. One-line errors.
expect_error "model: n_head 3 must divide n_embd 64" \
  "$SLM" train -c /dev/null "${COMMON[@]}" --set model.n_head=3 --set run.dir=e1
expect_error "batch: batch_size 0 must be >= 1" \
  "$SLM" train -c /dev/null "${COMMON[@]}" --set batch.batch_size=0 --set run.dir=e1
expect_error "batch: seq_len 65 must be in [1, model.block_size = 64]" \
  "$SLM" train -c /dev/null "${COMMON[@]}" --set batch.seq_len=65 --set run.dir=e1
expect_error "unknown key [optim] learning_rate" \
  "$SLM" train -c /dev/null "${COMMON[@]}" --set optim.learning_rate=1 --set run.dir=e1
printf '[model]\nn_layers = 3\n' > bad.toml
expect_error "bad.toml: unknown key [model] n_layers" "$SLM" train -c bad.toml --set data.dir=data
expect_error "parameter wte.weight has shape 512x64 but the model expects 512x32; saved from a different model" \
  "$SLM" train -c /dev/null "${COMMON[@]}" --set model.n_embd=32 --set schedule.max_steps=12 --set run.dir=split --resume
"$SLM" tokenizer train "$corpus" --vocab-size 500 --out tok2 -q >/dev/null
"$SLM" data prepare "$corpus" -t tok2 --separator blank --val-fraction 0.02 --out data2 -q >/dev/null
expect_error "saved for data of another tokenizer" \
  "$SLM" train -c /dev/null "${COMMON[@]}" --set data.dir=data2 --set model.vocab_size=0 --set schedule.max_steps=12 --set run.dir=split --resume
expect_error "data2/manifest.json: prepared with a different tokenizer" \
  "$SLM" train -c /dev/null "${COMMON[@]}" --set data.mix="data2=0.3" --set run.dir=e1
expect_error "train: dataset directory not found" "$SLM" train -c /dev/null --set data.dir=train --set run.dir=e1
# 5. Ctrl-C: a checkpoint is saved, exit code 130, and the run resumes from it.
"$SLM" train -c /dev/null "${COMMON[@]}" --set schedule.max_steps=100000 --set eval.every=0 \
  --set checkpoint.every=0 --set run.dir=sig 2> sig.log &
pid=$!
for i in $(seq 600); do grep -q "step " sig.log 2>/dev/null && break; sleep 0.1; done
sleep 0.5
kill -INT $pid
rc=0; wait $pid || rc=$?
[ "$rc" -eq 130 ] || { cat sig.log; fail "exit code after SIGINT: $rc"; }
grep -q "stopped by signal at step" sig.log || fail "no stop message"
ls sig/checkpoints | grep -q step_ || fail "no checkpoint after SIGINT"
"$SLM" train -c /dev/null "${COMMON[@]}" --set schedule.max_steps=100000 --set run.dir=sig \
  --resume --stop-at $(( $(ls sig/checkpoints | sed 's/step_0*//' | sort -n | tail -1) + 1 )) 2> sig2.log \
  || { cat sig2.log; fail "resume after SIGINT"; }
grep -q "resumed from" sig2.log || fail "did not resume after SIGINT"
echo "ok: SIGINT saved a checkpoint (exit 130) and the run resumed"
expect_clean straight/checkpoints
expect_clean sig/checkpoints
echo "train_resume: all passed"
