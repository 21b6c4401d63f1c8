# tests/e2e/wan_comm.sh: WAN-aware gradient all-reduce (comm/hierarchy.h) trains the same model as
# one process (4 ranks on loopback, treated as 2 sites of 2 ranks):
#  - hierarchical data parallelism (ZeRO 0 and 2), and 3 channels with small chunks: every step's
#    loss within 1e-5 of the single-process run;
#  - hierarchical with bf16 across sites: within 1e-3 (compression error, stated);
#  - the data-parallel bytes are counted over the extra groups too;
#  - hybrid sharding (parallel.zero_scope = "site": ZeRO 1/2/3 state split inside each site,
#    replicated across sites): same losses within 1e-5; its checkpoint has one shard per rank of a
#    site (2, not 4) and one process resumes it with the same losses;
#  - channels from a topology file, and the links probed at start (dist.topology = probe);
#  - `slm probe --allreduce-mb` times the all-reduce as the [dist] options make it;
#  - one-line errors for bad [dist] values.
# (The collective-level comparison with the flat all-reduce is in tests/tools/dist_check.cpp.)
source "$(dirname "$0")/lib.sh"
cd "$WORK"
make_dataset "$(real_corpus)" 512 0.02
COMMON=(-c /dev/null --set system.precision=fp32 --set data.dir=data "${TINY_MODEL[@]}"
        --set batch.batch_size=16 --set batch.micro_batch=4
        --set optim.lr=3e-3 --set schedule.warmup_steps=4 --set schedule.max_steps=12
        --set eval.every=0 --set log.every=6 --set parallel.bucket_mb=0.1)
"$SLM" train "${COMMON[@]}" --set run.dir=ref 2> ref.log || { cat ref.log; fail "single-process run"; }
as_ref() {  # NAME TOL [bytes]: every step's loss of run NAME within TOL of the single-process run
  python3 - ref "$1" "$2" "${3:-}" <<'PY' || fail "$1: differs from the single-process run"
import json, sys
rows = lambda d: [json.loads(l) for l in open(d + "/metrics.jsonl") if '"loss"' in l]
a, b = rows(sys.argv[1]), rows(sys.argv[2])
d = max(abs(x["loss"] - y["loss"]) for x, y in zip(a, b))
print(f"{sys.argv[2]}: max |loss diff| {d:.1e}, data-parallel bytes/step {b[-1]['bytes_dp']:.0f}")
assert len(a) == len(b) == 12 and d < float(sys.argv[3])
assert sys.argv[4] != "bytes" or b[-1]["bytes_dp"] > 0
PY
}
check() {  # NAME TOL ARGS...: 4 ranks with ARGS
  local name=$1 tol=$2; shift 2
  "$SLM" launch -n 4 -- "$SLM" train "${COMMON[@]}" --set run.dir="$name" "$@" > "$name.log" 2>&1 \
    || { cat "$name.log"; fail "$name"; }
  as_ref "$name" "$tol" bytes
}
check hier 1e-5 --set dist.ranks_per_site=2
check hier_zero2 1e-5 --set dist.ranks_per_site=2 --zero 2
check channels 1e-5 --set dist.channels=3 --set dist.chunk_mb=0.01
check compressed 1e-3 --set dist.ranks_per_site=2 --set dist.compress=true
HYBRID=(--set dist.ranks_per_site=2 --set parallel.zero_scope=site)
check hybrid_zero1 1e-5 "${HYBRID[@]}" --zero 1
check hybrid_zero2 1e-5 "${HYBRID[@]}" --zero 2
check hybrid_zero3 1e-5 "${HYBRID[@]}" --zero 3
grep -q "ZeRO state: split over the 2 ranks of each site" hybrid_zero2.log || fail "hybrid sharding not reported"
"$SLM" launch -n 4 -- "$SLM" train "${COMMON[@]}" "${HYBRID[@]}" --zero 2 --set run.dir=hybrid_rs --stop-at 6 \
  > hybrid_rs.log 2>&1 || { cat hybrid_rs.log; fail "hybrid ZeRO 2 stop at 6"; }
shards=$(ls hybrid_rs/checkpoints/step_00000006 | grep -c "shard_")
[ "$shards" -eq 2 ] || { ls hybrid_rs/checkpoints/step_00000006; fail "hybrid checkpoint has $shards shards, want 2"; }
"$SLM" train "${COMMON[@]}" --set run.dir=hybrid_rs --resume 2> hybrid_rs_b.log \
  || { cat hybrid_rs_b.log; fail "resume a hybrid checkpoint as one process"; }
as_ref hybrid_rs 1e-5
expect_error "parallel: zero_scope = \"site\" needs dist.ranks_per_site" "$SLM" train "${COMMON[@]}" \
  --set parallel.zero_scope=site
expect_error "parallel: zero_scope \"rack\" is not dp or site" "$SLM" train "${COMMON[@]}" --set parallel.zero_scope=rack
expect_error "dist: compress needs ranks_per_site > 0" "$SLM" train "${COMMON[@]}" --set dist.compress=true
expect_error "dist: channels must be 0..16 (0 = auto)" "$SLM" train "${COMMON[@]}" --set dist.channels=-1
# channels from a probed topology: 50 ms one-way at 1 Gbit/s keeps 12.5 MB in flight -> 6 channels
printf '{"classes": {"local": {"alpha_s": 0.0002, "beta_Bps": 1e9}, "wide": {"alpha_s": 0.05, "beta_Bps": 1.25e8}}}' > topo.json
check auto_channels 1e-5 --set dist.topology=topo.json
grep -q "6 channels" auto_channels.log || { cat auto_channels.log; fail "channels not taken from the topology"; }
# probed at start (dist.topology = probe): the file in the run folder, same training
check probed 1e-5 --set dist.topology=probe --set dist.ranks_per_site=2
grep -q "probe: 4 ranks in" probed.log && [ -s probed/topology.json ] || { cat probed.log; fail "no probe at start"; }
# slm probe times the all-reduce the way these options make it
"$SLM" launch -n 4 -- "$SLM" probe --sizes 4,4096 --repeats 1 --no-collectives --allreduce-mb 1 --ranks-per-site 2 \
  --channels 2 -o probe.json > probe.log 2>&1 || { cat probe.log; fail "slm probe --allreduce-mb"; }
grep -q "all-reduce (hierarchical all-reduce (2 sites x 2 ranks), 2 channels) of 1048576 bytes" probe.log \
  || { cat probe.log; fail "configured all-reduce not timed"; }
grep -q '"op": "all-reduce (hierarchical' probe.json || fail "configured all-reduce timing not in the topology file"
grep -q '"op": "all-gather"' probe.json && fail "--no-collectives still timed the world collectives"
printf 'nonsense' > bad.json
expect_error "dist.topology: bad.json: not a topology file" "$SLM" train "${COMMON[@]}" --set dist.topology=bad.json
echo "WAN-aware all-reduce matches the single-process run"
