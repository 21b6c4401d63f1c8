# tests/e2e/link_faults.sh: training across links that misbehave (issue 17), on the testbed
# (needs root, network namespaces, iptables-legacy and slm-delayer; skipped otherwise).
#  1. 5% packet loss and +-2 ms jitter on the cross-site link for the whole run: training goes on,
#     and its losses equal the same job's without the testbed (TCP hides the loss; only time is
#     lost); the link counters show the drops.
#  2. An outage shorter than dist.timeout_s: survived in place (one long pause, no restart).
#  3. An outage longer than dist.timeout_s under `slm testbed run --max-restarts 2`: the ranks give
#     up on the collective, the job restarts, waits for the link at rendezvous, and finishes; the
#     restart is in RUN/events.jsonl.
#  4. Outages need slm-delayer: asking for netem with one is a one-line error.
source "$(dirname "$0")/lib.sh"
need_testbed
cd "$WORK"
gen_corpus 2000 > gen.txt
make_dataset gen.txt 300 0.05
COMMON=(-c /dev/null --set system.precision=fp32 --set system.threads=1 --set data.dir="$WORK/data"
        --set model.n_layer=2 --set model.n_head=2 --set model.n_embd=64 --set model.block_size=32
        --set batch.batch_size=8 --set batch.micro_batch=4 --set eval.every=0 --set log.every=1000
        --set checkpoint.every=20 --dp 2)
testbed() {  # testbed NAME EXTRA_LINK_LINES: two sites of one rank, 10 ms one way
  printf 'name = "tbf"\ndelay = "delayer"\n[[site]]\nname = "a"\n[[site]]\nname = "b"\n[[link]]\nsites = ["a", "b"]\ndelay_ms = 10\n%b' \
    "$2" > "$1.toml"
}

# 1. Loss and jitter: same losses as without the testbed.
"$SLM" launch -n 2 -- "$SLM" train "${COMMON[@]}" --set schedule.max_steps=30 --set run.dir="$WORK/plain" \
  > plain.log 2>&1 || { cat plain.log; fail "plain run"; }
testbed lossy 'loss_pct = 5\njitter_ms = 2\n'
"$SLM" testbed run lossy.toml --link-log links.log -- "$SLM" train "${COMMON[@]}" --set schedule.max_steps=30 \
  --set run.dir="$WORK/lossy" > lossy.log 2>&1 || { cat lossy.log; fail "training across a lossy link"; }
grep "testbed: link" lossy.log
grep -q "5% loss, jitter +-2 ms" lossy.log || fail "link faults not reported"
dropped=$(grep -o "dropped [0-9]*" links.log | awk '{s += $2} END {print s + 0}')
[ "$dropped" -gt 0 ] || { cat links.log; fail "no packet was dropped"; }
same_losses plain lossy 1e-6
echo "ok: 5% loss and jitter: $dropped packets dropped, same losses"

# 2. A 3 s outage with a 30 s timeout: the run waits it out. (Outages count from the testbed's
# start; 12 s leaves room for a slow start of the ranks on a loaded machine, and the run is long
# enough to be training then.)
testbed blip 'down_at_s = 12\ndown_for_s = 3\n'
"$SLM" testbed run blip.toml -- "$SLM" train "${COMMON[@]}" --set schedule.max_steps=500 --set dist.timeout_s=30 \
  --set run.dir="$WORK/blip" > blip.log 2>&1 || { cat blip.log; fail "a short outage ended the run"; }
[ ! -e blip/events.jsonl ] || fail "a short outage restarted the run"
python3 - blip/metrics.jsonl <<'PY' || { cat blip.log; fail "the outage did not happen during training"; }
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"loss"' in l]
# The stall may fall in a step, its agreement or a checkpoint: look at the time between step ends.
gap = max(b["time"] - a["time"] for a, b in zip(rows, rows[1:]))
print(f"{len(rows)} steps, the longest time between two steps {gap:.1f} s")
assert len(rows) == 500 and gap > 2, gap
PY
echo "ok: a 3 s outage survived in place"

# 3. A 20 s outage with a 4 s timeout, --max-restarts 2: restarted, finished.
testbed down 'down_at_s = 12\ndown_for_s = 20\n'
"$SLM" testbed run down.toml --max-restarts 2 -- "$SLM" train "${COMMON[@]}" --set schedule.max_steps=500 \
  --set dist.timeout_s=4 --set dist.join_timeout_s=120 --set run.dir="$WORK/down" > down.log 2>&1 \
  || { cat down.log; fail "a long outage: the restarted job did not finish"; }
grep "slm launch\|restart" down.log | grep -v "step [0-9]*/" || true
[ -s down/events.jsonl ] && grep -q '"event":"restart"' down/events.jsonl || { cat down.log; fail "no restart recorded"; }
grep -q "\[0\] checkpoint .*step_00000500" down.log || fail "did not reach step 500"
echo "ok: a 20 s outage: restarted ($(wc -l < down/events.jsonl) time(s)) and finished"

# 4. Outages are the delayer's.
printf 'delay = "netem"\n[[site]]\nname = "a"\n[[site]]\nname = "b"\n[[link]]\nsites = ["a", "b"]\ndown_at_s = 1\ndown_for_s = 1\n' > netem.toml
expect_error "testbed: link outages (down_at_s, down_for_s) need delay = \"auto\" or \"delayer\"" "$SLM" testbed up netem.toml
