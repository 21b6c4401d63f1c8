# tests/e2e/elastic_testbed.sh: losing a whole site of the testbed (issue 17; needs root, network
# namespaces, iptables-legacy and slm-delayer; skipped otherwise). `slm testbed run --elastic 1`
# runs each of 2 sites x 2 ranks as one machine of an elastic job, with `parallel.plan = "auto"`.
# Site b's launcher is SIGKILLed mid-run (its ranks die with it, as in a pre-empted VM): the job
# goes on on site a alone with a new plan for its 2 ranks (resharded from the newest checkpoint),
# finishes with exit 0, and RUN/events.jsonl records the lost site and the new layout. The same
# with DiLoCo across the sites: the job goes on as one site.
source "$(dirname "$0")/lib.sh"
need_testbed
cd "$WORK"
gen_corpus 2000 > gen.txt
make_dataset gen.txt 300 0.05
{ printf 'name = "tbel"\ndelay = "delayer"\n'; two_sites 2 5; } > el.toml
# lose_site_b RUN ARGS: the elastic job with training ARGS, site b killed after step 60; it must
# finish on site a alone (exit 0, the final checkpoint, one shrink event naming the lost ranks).
lose_site_b() {
  local run=$1; shift
  "$SLM" testbed run el.toml --elastic 1 --max-restarts 1 --rejoin-timeout 2 -- "$SLM" train -c /dev/null \
    --set system.precision=fp32 --set system.threads=1 --set data.dir="$WORK/data" --set model.n_layer=2 \
    --set model.n_head=2 --set model.n_embd=64 --set model.block_size=32 --set batch.batch_size=8 \
    --set batch.micro_batch=2 --set eval.every=0 --set log.every=1000 --set checkpoint.every=20 \
    --set schedule.max_steps=400 --set dist.timeout_s=20 --set run.dir="$WORK/$run" "$@" > $run.log 2>&1 &
  local tb=$! site_b="" n rc=0
  for _ in $(seq 600); do
    site_b=$(grep -o "site b: launcher pid [0-9]*" $run.log | grep -o "[0-9]*$" || true)
    n=$(grep -c '"loss"' $run/metrics.jsonl 2>/dev/null || true)
    [ -n "$site_b" ] && [ "${n:-0}" -ge 60 ] && break
    sleep 0.1
  done
  [ -n "$site_b" ] || { kill $tb; cat $run.log; fail "$run: no launcher pid for site b"; }
  kill -9 "$site_b" || { kill $tb; cat $run.log; fail "$run: site b's launcher ended before it could be killed"; }
  wait $tb || rc=$?
  [ $rc -eq 0 ] || { cat $run.log; fail "$run: the job did not finish on site a (exit $rc)"; }
  grep -q "1 of 2 machines did not come back, going on with 1" $run.log || { grep "launch\|testbed" $run.log; fail "$run: no shrink"; }
  [ -d $run/checkpoints/step_00000400 ] || fail "$run: no final checkpoint"
  python3 - $run/events.jsonl <<'PY' || { grep "plan auto\|restart" $run.log; fail "$run: events.jsonl"; }
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert len(ev) == 1 and ev[0]["world"] == 2 and "did not come back" in ev[0]["cause"], ev
assert "lost ranks 2, 3" in ev[0]["cause"], ev  # the surviving rank names every lost rank of the job, whichever group failed
print("ok: site b lost:", ev[0]["cause"], "->", ev[0]["layout"])
PY
}

lose_site_b run --set parallel.plan=auto --set planner.all_ranks=true
[ "$(grep -c "plan auto:" run.log)" -ge 2 ] || fail "the job was not re-planned"
grep "plan auto:" run.log
# DiLoCo across the sites: the job goes on as one site (site a's ranks take site 0's model).
lose_site_b dl --set sync.mode=diloco --set dist.ranks_per_site=2 --set sync.inner_steps=10
grep -q "sync: the checkpoint has 2 site(s), this run 1: the models of site 1 are left out" dl.log \
  || { grep "sync\|launch" dl.log; fail "DiLoCo: not resumed on one site"; }
ip netns list | grep -q "^tbel-" && fail "namespaces left behind"
echo "ok: the job lost site b and finished on site a with a new plan (and under DiLoCo as one site)"
