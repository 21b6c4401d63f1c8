# tests/e2e/restarts.sh: a job that loses a rank restarts by itself and finishes (issue 17).
#  1. `slm launch --max-restarts 2`: kill -9 a random rank at a random step, on plain data
#     parallelism (rank 0 saves the last finished step alone) and on a 2-stage pipeline (back to
#     the last periodic checkpoint): the job restarts, resumes and finishes with exit 0;
#     RUN/events.jsonl names the cause and the steps lost, `slm report` shows it; the final
#     parameters and every later loss are bit-identical to a run resumed by hand from the same
#     checkpoint; no process is left behind.
#  2. checkpoint.every_minutes saves by rank 0's clock on every rank (2 ranks, no step interval).
#     checkpoint.async writes in the background: byte-identical checkpoints to synchronous saves
#     (ZeRO-1 on 2 ranks, and a 2-stage pipeline), the same losses, the time each save cost the
#     training thread in metrics.jsonl. (A full disk during a background write: hardening.sh.)
#  3. The launcher gives up after N restarts, never restarts an input or usage error (exit 1, 2:
#     a missing dataset, a run that needs --resume), stops with 143 and a line on SIGTERM during
#     --restart-delay, records a restart that failed before it resumed and giving up in
#     RUN/events.jsonl, and refuses --max-restarts with a fixed --nnodes > 1 (across machines:
#     elastic.sh).
source "$(dirname "$0")/lib.sh"
cd "$WORK"
gen_corpus 2000 > gen.txt
make_dataset gen.txt 300 0.05
COMMON=(-c /dev/null --set system.precision=fp32 --set system.threads=1 --set data.dir=data --set model.n_layer=2
        --set model.n_head=2 --set model.n_embd=64 --set model.block_size=32 --set batch.batch_size=8
        --set batch.micro_batch=4 --set eval.every=0 --set log.every=1000 --set dist.timeout_s=20
        --set schedule.max_steps=200 --set checkpoint.every=20 --set checkpoint.keep=100)
seed=${SLM_TEST_SEED:-$RANDOM}
echo "random seed $seed (SLM_TEST_SEED=$seed repeats this run)"
RANDOM=$seed
last_step() { python3 -c "
import json, sys
s = [json.loads(l)['step'] for l in open(sys.argv[1]) if '\"loss\"' in l]
print(s[-1] if s else 0)" "$1" 2>/dev/null || echo 0; }
# The losses of steps after $2 (the last record of a step wins, as in slm report).
losses_after() { python3 -c "
import json, sys
rows = {}
for l in open(sys.argv[1]):
    r = json.loads(l)
    if 'loss' in r: rows[r['step']] = r['loss']
print(' '.join(repr(rows[k]) for k in sorted(rows) if k > int(sys.argv[2])))" "$1" "$2"; }

# 1. Kill a random rank at a random step.
for layout in dp pp; do
  flags=(--dp 2); [ $layout = pp ] && flags=(--pp 2 --micro-batches 2)
  kill_at=$((25 + RANDOM % 100)); victim=$((RANDOM % 2))
  "$SLM" launch -n 2 --max-restarts 2 --restart-delay 0 -- "$SLM" train "${COMMON[@]}" "${flags[@]}" \
    --set run.dir=$layout > $layout.log 2>&1 &
  launcher=$!
  for _ in $(seq 600); do [ "$(last_step $layout/metrics.jsonl)" -ge $kill_at ] && break; sleep 0.05; done
  pid=$(for p in $(pgrep -P $launcher); do tr '\0' '\n' < /proc/$p/environ | grep -qx RANK=$victim && echo $p; done; true)
  [ -n "$pid" ] || { cat $layout.log; fail "$layout: rank $victim not found"; }
  kill -9 "$pid" || fail "$layout: rank $victim ended before it could be killed (steps too fast?)"
  killed_after=$(last_step $layout/metrics.jsonl)
  rc=0; wait $launcher || rc=$?
  grep -v "step " $layout.log || true
  [ "$rc" -eq 0 ] || fail "$layout: the restarted job exited $rc"
  grep -q "slm launch: restart 1 of 2 in 0 s from the newest checkpoint (rank $victim was killed by signal 9)" $layout.log \
    || fail "$layout: no restart line naming rank $victim"
  [ "$(wc -l < $layout/events.jsonl)" -eq 1 ] || fail "$layout: expected one event"
  resumed=$(python3 - $layout/events.jsonl "$victim" "$killed_after" <<'PY'
import json, sys
e = json.loads(open(sys.argv[1]).readline())
victim, killed_after = int(sys.argv[2]), int(sys.argv[3])
assert e["event"] == "restart" and e["restart"] == 1, e
assert e["cause"] == f"rank {victim} was killed by signal 9", e
# A step's metrics line waits for its agreement; rank 0 may finish (and save alone) a step the lost
# peer never agreed on, so it can resume one step past the last recorded one: 0 lost, not -1.
assert e["last_step"] >= killed_after and e["steps_lost"] == max(0, e["last_step"] - e["resumed_step"]), e
assert e["down_s"] > 0 and e["world"] == 2, e
print(e["resumed_step"])
PY
) || fail "$layout: events.jsonl"
  [ "$resumed" -gt 0 ] || fail "$layout: resumed from step 0"
  [ $layout = dp ] && [ $victim = 1 ] && { [ "$resumed" -ge "$killed_after" ] || fail "dp: rank 0 did not save its last step"; }
  [ $layout = pp ] && { [ $((resumed % 20)) -eq 0 ] || fail "pp: resumed at $resumed, not a periodic checkpoint"; }
  "$SLM" report $layout > report.txt || fail "$layout: slm report"
  grep -q "| restarts | 1 (.* finished steps lost" report.txt || { cat report.txt; fail "$layout: report lacks the restart"; }
  grep -q "restart 1 (rank $victim was killed by signal 9): resumed at step $resumed" report.txt || fail "$layout: report line"
  # By hand: the same checkpoint, resumed without a failure.
  ckpt=$(printf 'step_%08d' "$resumed")
  mkdir -p ref_$layout/checkpoints && cp -r $layout/checkpoints/$ckpt ref_$layout/checkpoints/
  "$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" "${flags[@]}" --set run.dir=ref_$layout --resume \
    > ref_$layout.log 2>&1 || { cat ref_$layout.log; fail "$layout: resume by hand"; }
  for f in ref_$layout/checkpoints/step_00000200/*.pt; do
    cmp -s "$f" "$layout/checkpoints/step_00000200/$(basename "$f")" || fail "$layout: $(basename "$f") differs"
  done
  a=$(losses_after ref_$layout/metrics.jsonl "$resumed"); b=$(losses_after $layout/metrics.jsonl "$resumed")
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "$layout: losses after step $resumed differ"
  sleep 0.5
  if pgrep -f "run.dir=$layout\$" >/dev/null; then fail "$layout: processes left behind"; fi
  echo "ok: $layout, rank $victim killed after step $killed_after: restarted at step $resumed, finished, final state bit-identical"
done

# 2. checkpoint.every_minutes (0.001 min = 60 ms) with no step interval, on 2 ranks.
"$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" --dp 2 --set schedule.max_steps=60 --set checkpoint.every=0 \
  --set checkpoint.every_minutes=0.001 --set run.dir=minutes > minutes.log 2>&1 || { cat minutes.log; fail "every_minutes"; }
n=$(ls minutes/checkpoints | wc -l)
[ "$n" -ge 3 ] || { ls minutes/checkpoints; fail "every_minutes: $n checkpoints"; }
echo "ok: checkpoint.every_minutes wrote $n checkpoints"
expect_error "checkpoint: every and every_minutes must be >= 0" \
  "$SLM" train "${COMMON[@]}" --set checkpoint.every_minutes=-1 --set run.dir=bad

for flags in "--dp 2 --zero 1" "--pp 2 --micro-batches 2"; do
  for async in false true; do
    "$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" $flags --set schedule.max_steps=60 --set checkpoint.async=$async \
      --set run.dir=async_$async > async_$async.log 2>&1 || { cat async_$async.log; fail "checkpoint.async=$async ($flags)"; }
  done
  [ "$(grep -c 'written in the background since step' async_true.log)" -eq 2 ] || { cat async_true.log; fail "no background saves"; }
  for f in async_false/checkpoints/*/*.pt; do
    cmp -s "$f" "${f/async_false/async_true}" || fail "$flags: ${f#async_false/} differs between synchronous and background saves"
  done
  [ "$(ls async_true/checkpoints)" = "$(ls async_false/checkpoints)" ] || fail "$flags: other checkpoints"
  same_losses async_false async_true 1e-12
  python3 - async_true/metrics.jsonl <<'PY' || fail "checkpoint times not recorded"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if "checkpoint_s" in l]
assert [r["checkpoint_async"] for r in rows] == [True, True, False], rows
PY
  rm -rf async_true async_false
  echo "ok: background checkpoints ($flags) byte-identical to synchronous ones"
done

# 3. Giving up, usage errors, several machines.
rc=0; "$SLM" launch -n 2 --max-restarts 2 --restart-delay 0 -- sh -c 'exit 3' > up.log 2>&1 || rc=$?
[ $rc -eq 3 ] && grep -q "restart 2 of 2" up.log && grep -q "giving up after 2 restarts (last: rank . exited with code 3)" up.log \
  || { cat up.log; fail "giving up (exit $rc)"; }
rc=0; "$SLM" launch -n 2 --max-restarts 2 -- sh -c 'exit 2' > usage.log 2>&1 || rc=$?
[ $rc -eq 2 ] && grep -q "not restarting after a usage error" usage.log && ! grep -q "restart 1" usage.log \
  || { cat usage.log; fail "usage error restarted (exit $rc)"; }
# An input error (exit 1) would fail the same way again: a missing dataset is not started 4 times,
# and a finished run's "has checkpoints; pass --resume" refusal is not turned into a resume with
# other settings by the restart.
rc=0; "$SLM" launch -n 2 --max-restarts 3 --restart-delay 0 -- "$SLM" train "${COMMON[@]}" --dp 2 \
  --set data.dir=/nonexistent --set run.dir=nodata > nodata.log 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "not restarting after an input error (exit 1)" nodata.log && ! grep -q "restart 1 of" nodata.log \
  || { cat nodata.log; fail "an input error was restarted (exit $rc)"; }
"$SLM" train "${COMMON[@]}" --set schedule.max_steps=20 --set run.dir=done > done.log 2>&1 || { cat done.log; fail "the run to refuse"; }
sum_before=$(cat done/checkpoints/*/* | sha256sum)
rc=0; "$SLM" launch -n 1 --max-restarts 2 --restart-delay 0 -- "$SLM" train "${COMMON[@]}" --set schedule.max_steps=40 \
  --set optim.lr=1e-2 --set run.dir=done > again.log 2>&1 || rc=$?
[ $rc -eq 1 ] && grep -q "pass --resume" again.log && ! grep -q "restart 1 of" again.log \
  && [ "$(ls done/checkpoints)" = step_00000020 ] && [ "$(cat done/checkpoints/*/* | sha256sum)" = "$sum_before" ] \
  || { cat again.log; ls done/checkpoints; fail "the refusal to overwrite a run was restarted into a resume (exit $rc)"; }
# A restart whose rank dies again before the job resumed (here: rank 1 before rendezvous, every
# time) is recorded by the launcher in RUN/events.jsonl, and so is giving up (there was no file).
cat > die1.sh <<'SH'
if [ "$RANK" = 1 ]; then sleep 3; exit 5; fi  # rank 0 is in rendezvous by then
exec "$@"
SH
rc=0; "$SLM" launch -n 2 --max-restarts 1 --restart-delay 0 --grace 1 -- sh die1.sh "$SLM" train "${COMMON[@]}" --dp 2 \
  --set run.dir=dies > dies.log 2>&1 || rc=$?
[ $rc -eq 5 ] && grep -q "giving up after 1 restarts (last: rank 1 exited with code 5)" dies.log || { cat dies.log; fail "dies: exit $rc"; }
python3 - dies/events.jsonl <<'PY' || fail "the failed restart and giving up are not in events.jsonl"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert [e["event"] for e in ev] == ["restart_failed", "gave_up"], ev
assert ev[0]["restart"] == 1 and ev[0]["cause"] == ev[0]["failure"] == "rank 1 exited with code 5", ev
assert ev[1]["restarts"] == 1 and ev[1]["cause"] == "rank 1 exited with code 5", ev
PY
# SIGTERM while the launcher waits to restart: exit 143 and a line, not the failed rank's code.
"$SLM" launch -n 1 --max-restarts 2 --restart-delay 30 -- sh -c 'kill -9 $$' > delay.log 2>&1 &
launcher=$!
for i in $(seq 100); do grep -q "restart 1 of 2 in 30 s" delay.log && break; sleep 0.1; done
kill -TERM $launcher
rc=0; wait $launcher || rc=$?
[ $rc -eq 143 ] && grep -q "slm launch: stopped by signal 15 before the restart" delay.log \
  || { cat delay.log; fail "SIGTERM during --restart-delay: exit $rc"; }
expect_error "--max-restarts across machines needs an elastic job" \
  "$SLM" launch -n 1 --nnodes 2 --node-rank 0 --master 127.0.0.1:29999 --max-restarts 1 -- true
echo "ok: restarts give up, input and usage errors are not restarted, SIGTERM between starts, a fixed --nnodes > 1 refused"
