# tests/e2e/dist_failures.sh: a distributed job never hangs and never loses its work.
#  1. A rank killed with SIGKILL mid-run: the other rank exits within the timeout with an error
#     naming rank 1; `slm launch` stops, exits non-zero; no slm process is left; rank 0 saved
#     the last finished step (DDP holds the whole state), and --resume continues from it.
#  2. A peer that never arrives: rendezvous fails within join_timeout_s with a one-line error,
#     as rank 0 (waiting for workers) and as rank 1 (no store to reach).
#  3. Ranks started with different settings: one-line error naming the rank, before training.
#  4. SIGTERM to the launcher: every rank stops after the same step, saves, exits 143; --resume.
#  5. dist.interface: "lo" works, an unknown interface is a one-line error.
#  6. Bad launch options and environment: one-line errors.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
gen_corpus 2000 > gen.txt
make_dataset gen.txt 300 0.05
COMMON=(-c /dev/null --set system.precision=fp32 --set data.dir=data --set model.n_layer=1 --set model.n_head=2 --set model.n_embd=32
        --set model.block_size=32 --set batch.batch_size=8 --set batch.micro_batch=4
        --set eval.every=0 --set log.every=1000 --set dist.timeout_s=20 --set checkpoint.every=0)
no_leftovers() {
  sleep 0.5
  if pgrep -f "run.dir=$1" >/dev/null; then pgrep -af "run.dir=$1"; fail "processes left behind for $1"; fi
}

# 1. Kill rank 1.
"$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" --set schedule.max_steps=1000000 --set run.dir=kill \
  > kill.log 2>&1 &
launcher=$!
for _ in $(seq 100); do grep -q "step 1/" kill.log 2>/dev/null && break; sleep 0.2; done
rank1=$(for p in $(pgrep -P $launcher); do tr '\0' '\n' < /proc/$p/environ | grep -qx RANK=1 && echo $p; done)
[ -n "$rank1" ] || { cat kill.log; fail "rank 1 not found"; }
start=$(date +%s)
kill -9 "$rank1"
rc=0; wait $launcher || rc=$?
took=$(( $(date +%s) - start ))
cat kill.log | grep -v "step " || true
[ "$rc" -ne 0 ] || fail "launcher exited 0 after a rank was killed"
[ "$took" -lt 60 ] || fail "took $took s to stop"
grep -q "slm launch: rank 1 was killed by signal 9" kill.log || fail "launcher did not report rank 1"
grep -q "\[0\] slm: error: .*lost rank 1" kill.log || fail "rank 0 did not name the lost rank"
grep -q "saved by rank 0 alone after losing a peer" kill.log || fail "rank 0 did not save"
no_leftovers kill
ckpt=$(ls kill/checkpoints)
step=$((10#${ckpt#step_}))
"$SLM" train "${COMMON[@]}" --set schedule.max_steps=1000000 --set run.dir=kill --resume --stop-at $((step + 2)) \
  2> resume.log || { cat resume.log; fail "resume after the lost rank"; }
grep -q "resumed from kill/checkpoints/$ckpt" resume.log || fail "did not resume from $ckpt"

# 1b. A rank that hangs (SIGSTOP): the collective times out after dist.timeout_s, rank 0 names
# rank 1 (its heartbeat stopped), and the launcher kills the stopped rank after --grace.
"$SLM" launch -n 2 --grace 2 -- "$SLM" train "${COMMON[@]}" --set schedule.max_steps=1000000 \
  --set dist.timeout_s=5 --set run.dir=hang > hang.log 2>&1 &
launcher=$!
for _ in $(seq 100); do grep -q "step 1/" hang.log 2>/dev/null && break; sleep 0.2; done
rank1=$(for p in $(pgrep -P $launcher); do tr '\0' '\n' < /proc/$p/environ | grep -qx RANK=1 && echo $p; done)
start=$(date +%s)
kill -STOP "$rank1"
rc=0; wait $launcher || rc=$?
took=$(( $(date +%s) - start ))
[ "$rc" -ne 0 ] && [ "$took" -lt 40 ] || { cat hang.log; fail "hung rank: exit $rc after $took s"; }
grep -q "\[0\] slm: error: .*lost rank 1" hang.log || { cat hang.log; fail "rank 0 did not name the hung rank"; }
no_leftovers hang
echo "hung rank detected in $took s"

# 2. A peer that never arrives.
start=$(date +%s)
expect_error "rendezvous at 127.0.0.1:" env RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29731 \
  "$SLM" train "${COMMON[@]}" --set run.dir=alone --set dist.join_timeout_s=3
expect_error "rendezvous at 127.0.0.1:" env RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29732 \
  "$SLM" train "${COMMON[@]}" --set run.dir=alone --set dist.join_timeout_s=3
[ $(( $(date +%s) - start )) -lt 40 ] || fail "rendezvous timeouts took too long"

# 3. Different settings on different ranks.
export MASTER_ADDR=127.0.0.1 MASTER_PORT=29733 WORLD_SIZE=2
RANK=1 "$SLM" train "${COMMON[@]}" --set run.dir=mix --set optim.lr=1e-3 2> mix1.log &
expect_error "rank 1's configuration differs from rank 0's" env RANK=0 "$SLM" train "${COMMON[@]}" --set run.dir=mix
wait || true
grep -q "rank 1's configuration differs" mix1.log || fail "rank 1 did not report the mismatch"
unset MASTER_ADDR MASTER_PORT WORLD_SIZE

# 4. SIGTERM to the launcher.
"$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" --set schedule.max_steps=1000000 --set parallel.zero=1 \
  --set run.dir=term > term.log 2>&1 &
launcher=$!
for _ in $(seq 100); do grep -q "step 1/" term.log 2>/dev/null && break; sleep 0.2; done
kill -TERM $launcher
rc=0; wait $launcher || rc=$?
[ "$rc" -eq 143 ] || { cat term.log; fail "launcher exit $rc after SIGTERM, want 143"; }
grep -q "\[0\] stopped by signal at step" term.log || fail "rank 0 did not stop cleanly"
[ "$(ls term/checkpoints/*/ | grep -c shard_)" -eq 2 ] || fail "ZeRO 1 checkpoint should have 2 shards"
no_leftovers term

# 5. Network interface: loopback by name works; an unknown one is a one-line error on every rank.
"$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" --set schedule.max_steps=2 --set dist.interface=lo \
  --set run.dir=iface > iface.log 2>&1 || { cat iface.log; fail "dist.interface=lo"; }
rc=0; "$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" --set dist.interface=nosuch0 --set run.dir=iface2 \
  > iface2.log 2>&1 || rc=$?
[ "$rc" -eq 1 ] && [ "$(grep -c "slm: error: dist: cannot use network interface 'nosuch0'" iface2.log)" -eq 2 ] \
  || { cat iface2.log; fail "unknown interface: exit $rc"; }

# 6. Bad options and environment.
expect_error "launch: no command" "$SLM" launch -n 2
expect_error "launch: --nnodes > 1 needs --master" "$SLM" launch -n 1 --nnodes 2 -- true
expect_error "RANK=2 is not below WORLD_SIZE=2" env RANK=2 WORLD_SIZE=2 "$SLM" train "${COMMON[@]}"
expect_error "need MASTER_ADDR and MASTER_PORT" env -u MASTER_ADDR RANK=0 WORLD_SIZE=2 "$SLM" train "${COMMON[@]}"
rc=0; "$SLM" launch -n 4 -- "$SLM" train "${COMMON[@]}" --set run.dir=b > b.log 2>&1 || rc=$?
[ "$rc" -eq 1 ] && grep -q "\[0\] slm: error: batch: batch_size 8 must be a multiple of micro_batch 4 x 4" b.log \
  || { cat b.log; fail "batch not divisible by the ranks: exit $rc"; }
echo "failure handling ok"
