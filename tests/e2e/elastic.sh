# tests/e2e/elastic.sh: jobs across machines that restart, shrink and grow (issue 17):
# `slm launch --nnodes MIN:MAX`, one launcher per "machine" (here: launchers of one rank each on
# this machine, joined through the rendezvous of the one with --node-rank 0).
#  1. Shrink and grow (--nnodes 1:2): the second machine's launcher is SIGKILLed (its rank dies
#     with it); the first goes on alone after --rejoin-timeout, resharded onto one rank with the same
#     global batch; a new launcher asks to join, the running rank saves, and the job grows back to 2.
#     Every step's loss equals an uninterrupted 2-rank run's (within 1e-5), RUN/events.jsonl holds
#     both rounds (world 1, then 2) with their causes, `slm report` lists them, nothing is left running.
#     Degrees given by hand that no longer fit the new world (or its memory caps) fall back to the
#     nearest even preset that does.
#  2. Restarts across machines (--nnodes 2:2): a rank killed on machine 1 restarts both machines
#     from the newest checkpoint; the job finishes with exit 0.
#  3. Bad input, one line each: --nnodes 2:1 or x (usage, exit 2), MIN machines never arrive, no
#     host answers, another number of ranks per machine, the host lost mid-run, restarts used up.
source "$(dirname "$0")/lib.sh"
cd "$WORK"
gen_corpus 2000 > gen.txt
make_dataset gen.txt 300 0.05
COMMON=(-c /dev/null --set system.precision=fp32 --set system.threads=1 --set data.dir=data --set model.n_layer=2
        --set model.n_head=2 --set model.n_embd=64 --set model.block_size=32 --set batch.batch_size=8
        --set batch.micro_batch=4 --set eval.every=0 --set log.every=1000 --set dist.timeout_s=20
        --set schedule.max_steps=600 --set checkpoint.every=100 --set checkpoint.keep=100)
free_port() { python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }
last_step() { python3 -c "
import json, sys
s = [json.loads(l)['step'] for l in open(sys.argv[1]) if '\"loss\"' in l]
print(s[-1] if s else 0)" "$1" 2>/dev/null || echo 0; }
# Waits (up to 120 s) until the run's metrics reach step $2 / its events file has $2 lines.
wait_step() { for _ in $(seq 1200); do [ "$(last_step $1/metrics.jsonl)" -ge "$2" ] && return; sleep 0.1; done; fail "$1: step $2 never came"; }
wait_events() { for _ in $(seq 1200); do [ "$(cat $1/events.jsonl 2>/dev/null | wc -l)" -ge "$2" ] && return; sleep 0.1; done; fail "$1: no event $2"; }
# start_machines RUN N [ARGS]: the launchers of machines 0 and 1 (options in E) training into RUN
# (with more training ARGS), their output in aN.log and bN.log; sets A and B to their pids.
start_machines() {
  local run=$1 n=$2; shift 2
  "$SLM" launch -n 1 "${E[@]}" --node-rank 0 -- "$SLM" train "${COMMON[@]}" "$@" --set run.dir=$run > a$n.log 2>&1 &
  A=$!
  "$SLM" launch -n 1 "${E[@]}" --node-rank 1 -- "$SLM" train "${COMMON[@]}" "$@" --set run.dir=$run > b$n.log 2>&1 &
  B=$!
}
rank_of() { for p in $(pgrep -P "$1"); do tr '\0' '\n' < /proc/$p/environ | grep -qx "RANK=$2" && echo $p; done; true; }

# The reference: the same job, two ranks, no failure (1,000 steps: the one-rank part of the next
# run must outlast a new machine's joining even on a loaded host).
LONG=(--set schedule.max_steps=1000)
"$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" "${LONG[@]}" --set run.dir=ref > ref.log 2>&1 \
  || { cat ref.log; fail "reference run"; }

# 1. Shrink to the survivor, grow back (the new machine starts as the survivor's round begins).
E=(--nnodes 1:2 --master 127.0.0.1:$(free_port) --max-restarts 2 --rejoin-timeout 2 --restart-delay 0)
start_machines el '' "${LONG[@]}"
wait_step el 150
kill -9 $B
wait_events el 1
"$SLM" launch -n 1 "${E[@]}" --node-rank 1 -- "$SLM" train "${COMMON[@]}" "${LONG[@]}" --set run.dir=el > c.log 2>&1 &
C=$!
rc=0; wait $A || rc=$?
[ $rc -eq 0 ] || { cat a.log; fail "elastic: the host's launcher exited $rc"; }
rc=0; wait $C || rc=$?
[ $rc -eq 0 ] || { cat c.log; fail "elastic: the joining launcher exited $rc"; }
grep -q "slm launch: round 1: machine 0 of 1 (1 rank): rank 0 exited with code 4: .*lost rank 1; 1 of 2 machines did not come back, going on with 1" a.log \
  || { grep launch a.log; fail "no shrink line"; }
grep -q "slm launch: the job runs on 1 machine; asking to join at its next round" c.log || fail "no ask-to-join line"
grep -q "slm launch: round 2: machine 1 of 2 (2 ranks): a machine asked to join; 2 machines now, 1 before" c.log \
  || { grep launch c.log; fail "no grow line"; }
python3 - el/events.jsonl <<'PY' || fail "elastic: events.jsonl"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert [e["world"] for e in ev] == [1, 2], ev
assert [(e["old_layout"], e["layout"]) for e in ev] == [("pp 1 x dp 2 x tp 1, ZeRO 0", "pp 1 x dp 1 x tp 1, ZeRO 0"),
                                                       ("pp 1 x dp 1 x tp 1, ZeRO 0", "pp 1 x dp 2 x tp 1, ZeRO 0")], ev
assert "did not come back" in ev[0]["cause"] and "asked to join" in ev[1]["cause"], ev
assert ev[1]["steps_lost"] == 0 and ev[1]["resumed_step"] > ev[0]["resumed_step"] > 0, ev  # saved before growing
PY
python3 - ref/metrics.jsonl el/metrics.jsonl el/events.jsonl <<'PY' || fail "elastic: losses differ from the uninterrupted run"
import json, sys
def rows(f):
    r = {}
    for l in open(f):
        j = json.loads(l)
        if "loss" in j: r[j["step"]] = j["loss"]
    return r
a, b = rows(sys.argv[1]), rows(sys.argv[2])
# Steps that rank 0 finished (and saved alone after losing its peer, or saved before the job grew)
# whose agreement had not come have no metrics line: at most the two blocks of steps before the
# step the run resumes from (train/agreement.h).
resumed = {json.loads(l)["resumed_step"] for l in open(sys.argv[3])}
block = max(json.loads(l).get("agree_steps", 1) for l in open(sys.argv[2]) if '"loss"' in l)
missing = set(range(1, 1001)) - set(b)
assert sorted(a) == list(range(1, 1001)), len(a)
assert all(any(r - 2 * block < m <= r for r in resumed) for m in missing), (sorted(missing), resumed, block)
worst = max(abs(a[k] - b[k]) for k in b)
print(f"ok: {len(b)} steps, largest loss difference {worst:.2e}")
assert worst <= 1e-5
PY
"$SLM" report el > report.txt || fail "slm report"
grep -q "| restarts | 2 " report.txt || { cat report.txt; fail "report lacks the two rounds"; }
sleep 0.5
if pgrep -f "run.dir=el\$" >/dev/null; then fail "elastic: processes left behind"; fi
echo "ok: shrank to 1 machine after a lost one, grew back to 2, same losses"

# 1b. Degrees given by hand that no longer fit: checkpointed on 4 ranks at step 20, the job comes
# back on 2 (as a restarted rank sees it: SLM_RESTART_COUNT > 0) on the even preset that fits, with
# the same global batch and the same losses as an uninterrupted 4-rank run (fit4).
# shrink_to_two RUN LINE ARGS: the two halves with training ARGS; the restart must print LINE.
shrink_to_two() {
  local run=$1 line=$2; shift 2
  "$SLM" launch -n 4 -- "$SLM" train "$@" --set run.dir=$run --stop-at 20 > ${run}_a.log 2>&1 \
    || { cat ${run}_a.log; fail "$run: first half"; }
  "$SLM" launch -n 2 -- env SLM_RESTART_COUNT=1 "$SLM" train "$@" --set run.dir=$run > ${run}_b.log 2>&1 \
    || { cat ${run}_b.log; fail "$run: the restart on 2 ranks"; }
  grep -qF "restart: $line" ${run}_b.log || { grep -v "step " ${run}_b.log; fail "$run: no fallback line"; }
  same_losses fit4 $run 1e-5
}
HALF=(--set schedule.max_steps=40 --set checkpoint.every=20)
"$SLM" launch -n 4 -- "$SLM" train "${COMMON[@]}" "${HALF[@]}" --dp 2 --pp 2 --set run.dir=fit4 > fit4.log 2>&1 \
  || { cat fit4.log; fail "fit: 4 ranks"; }
# dp 2 x pp 2 on 2 ranks: the pipeline stays, one replica.
shrink_to_two fit "dp 2 x tp 1 x pp 2 does not fit 2 ranks; going on with dp 1 x tp 1 x pp 2 (the even preset" \
  "${COMMON[@]}" "${HALF[@]}" --dp 2 --pp 2
# 1c. ... and within the memory caps: dp 4 with ZeRO 3 under a 2 MiB cap, where dp 2 would need
# ~2.2 MiB per rank: a 2-stage pipeline (~1.8 MiB; ZeRO 2, since one replica has nothing to shard).
shrink_to_two mem "dp 4 x tp 1 x pp 1, ZeRO 3 does not fit 2 ranks; going on with dp 1 x tp 1 x pp 2, ZeRO 2 (the even preset that fits the memory caps" \
  "${COMMON[@]}" "${HALF[@]}" --dp 4 --zero 3 --set batch.micro_batch=2 --set parallel.memory_cap_gb=0.00195

# 2. Restarts across machines: kill a rank (not its launcher); both machines start again.
E=(--nnodes 2:2 --master 127.0.0.1:$(free_port) --max-restarts 1 --restart-delay 0)
start_machines rs 2
wait_step rs 120
pid=$(rank_of $B 1); [ -n "$pid" ] || fail "rank 1 not found"
kill -9 "$pid"
rc=0; wait $A || rc=$?; [ $rc -eq 0 ] || { cat a2.log; fail "restart: host exited $rc"; }
rc=0; wait $B || rc=$?; [ $rc -eq 0 ] || { cat b2.log; fail "restart: machine 1 exited $rc"; }
grep -q "slm launch: round 1: machine 1 of 2 (2 ranks): rank 1 was killed by signal 9" b2.log || { grep launch b2.log; fail "no restart line"; }
python3 -c "
import json, sys
ev = [json.loads(l) for l in open('rs/events.jsonl')]
assert len(ev) == 1 and ev[0]['world'] == 2 and ev[0]['cause'] == 'rank 1 was killed by signal 9', ev" || fail "restart: events"
[ -d rs/checkpoints/step_00000600 ] || fail "restart: no final checkpoint"
echo "ok: a rank killed on machine 1: both machines restarted and finished"

# 3. Bad input.
expect_error "--nnodes" "$SLM" launch -n 1 --nnodes 2:1 --master 127.0.0.1:1 -- true
expect_error "--nnodes" "$SLM" launch -n 1 --nnodes x -- true
expect_error "--nnodes: 1:2:3 is not N or MIN:MAX" "$SLM" launch -n 1 --nnodes 1:2:3 -- true
expect_error "--nnodes: 1:2x is not N or MIN:MAX" "$SLM" launch -n 1 --nnodes 1:2x -- true
expect_error "needs an elastic job: --nnodes N:N" "$SLM" launch -n 1 --nnodes 2 --master 127.0.0.1:1 --max-restarts 1 -- true
P=$(free_port)
expect_error "only 1 of at least 2 machines joined round 0 within 2 s" \
  "$SLM" launch -n 1 --nnodes 2:2 --master 127.0.0.1:$P --node-rank 0 --join-timeout 2 -- true
expect_error "no launcher with --node-rank 0 answered at 127.0.0.1:$P within 2 s" \
  "$SLM" launch -n 1 --nnodes 2:2 --master 127.0.0.1:$P --node-rank 1 --join-timeout 2 -- true
"$SLM" launch -n 1 --nnodes 2:2 --master 127.0.0.1:$P --node-rank 0 --join-timeout 4 -- true > host.log 2>&1 &
H=$!
sleep 0.5
expect_error "this machine runs 2 ranks (-n) but the job's others run 1" \
  "$SLM" launch -n 2 --nnodes 2:2 --master 127.0.0.1:$P --node-rank 1 --join-timeout 4 -- true
wait $H || true
# The host lost mid-run: the other machine stops with one line of its own.
E=(--nnodes 2:2 --master 127.0.0.1:$(free_port) --max-restarts 1 --restart-delay 0)
start_machines hl 3
wait_step hl 100
kill -9 $A
rc=0; wait $B || rc=$?
[ $rc -ne 0 ] && [ $rc -lt 128 ] || { cat b3.log; fail "host lost: machine 1 exited $rc"; }
grep -q "slm: error: launch: lost the launchers' rendezvous host at 127.0.0.1:" b3.log || { tail b3.log; fail "host lost: no line"; }
sleep 0.5
if pgrep -f "run.dir=hl\$" >/dev/null; then fail "host lost: processes left behind"; fi
# Restarts used up: every machine stops, the host says why.
E=(--nnodes 2:2 --master 127.0.0.1:$(free_port) --max-restarts 0 --restart-delay 0)
start_machines gu 4
wait_step gu 100
kill -9 "$(rank_of $B 1)"
rc=0; wait $A || rc=$?; [ $rc -ne 0 ] || fail "giving up: host exited 0"
rc=0; wait $B || rc=$?; [ $rc -ne 0 ] || fail "giving up: machine 1 exited 0"
grep -q "slm launch: giving up after 0 restarts (last: rank 1 was killed by signal 9)" a4.log || { grep launch a4.log; fail "no giving-up line"; }
grep -q "slm launch: giving up after 0 restarts" b4.log || { grep launch b4.log; fail "machine 1 not told"; }
echo "ok: bad input"
