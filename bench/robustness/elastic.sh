#!/usr/bin/env bash
# bench/robustness/elastic.sh: what shrinking and growing an elastic job costs (issue 17), on this machine.
# Two "machines" (launchers of one rank each, `slm launch --nnodes 1:2`), a 4 x 256 model on
# wikitext-2 (or a generated corpus), plain data parallelism, a checkpoint every 50 steps. At step
# 100 machine 1's launcher is SIGKILLed (its rank dies with it); the job shrinks to one machine
# after --rejoin-timeout; 60 steps later a new launcher joins and the job grows back to two.
# Prints, per round, the cause, seconds down, steps lost and tokens/s, and the largest loss
# difference from an uninterrupted 2-rank run of the same job.
# Usage: bench/robustness/elastic.sh [REJOIN_TIMEOUT_S]  (default 5).
set -euo pipefail
SLM=${SLM:-$(cd "$(dirname "$0")/../.." && pwd)/build/slm}
REJOIN=${1:-5}
SHARED=$(cd "$(dirname "$0")/../../.." && pwd)/shared/data
W=$(mktemp -d /tmp/slm_elastic_XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W"
src=$SHARED/wikitext-2/valid.txt
[ -f "$src" ] || { for i in $(seq 20000); do echo "Line $i: the fox $((i % 7)) jumps over the dog."; echo; done > gen.txt; src=gen.txt; }
"$SLM" tokenizer train "$src" --vocab-size 2048 --out tok -q > /dev/null
"$SLM" data prepare "$src" -t tok --separator line --val-fraction 0.01 --out data -q > /dev/null
JOB=(-c /dev/null --set data.dir=data --set model.n_layer=4 --set model.n_embd=256 --set model.n_head=4
     --set model.block_size=64 --set batch.batch_size=16 --set batch.micro_batch=8 --set eval.every=0
     --set log.every=1000 --set schedule.max_steps=300 --set system.precision=fp32 --set system.threads=1
     --set checkpoint.every=50 --set checkpoint.keep=2 --set dist.timeout_s=30)
last_step() { python3 -c "
import json, sys
s = [json.loads(l)['step'] for l in open(sys.argv[1]) if '\"loss\"' in l]
print(s[-1] if s else 0)" "$1" 2>/dev/null || echo 0; }
wait_step() { until [ "$(last_step $1/metrics.jsonl)" -ge "$2" ]; do sleep 0.1; done; }
port=$(python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")

"$SLM" launch -n 2 -- "$SLM" train "${JOB[@]}" --set run.dir=ref > ref.log 2>&1
E=(--nnodes 1:2 --master 127.0.0.1:$port --max-restarts 2 --rejoin-timeout "$REJOIN" --restart-delay 0)
t0=$(date +%s.%N)
"$SLM" launch -n 1 "${E[@]}" --node-rank 0 -- "$SLM" train "${JOB[@]}" --set run.dir=el > a.log 2>&1 &
A=$!
"$SLM" launch -n 1 "${E[@]}" --node-rank 1 -- "$SLM" train "${JOB[@]}" --set run.dir=el > b.log 2>&1 &
B=$!
wait_step el 100
kill -9 $B
until [ -s el/events.jsonl ]; do sleep 0.1; done
wait_step el "$(($(last_step el/metrics.jsonl) + 60))"
"$SLM" launch -n 1 "${E[@]}" --node-rank 1 -- "$SLM" train "${JOB[@]}" --set run.dir=el > c.log 2>&1 &
C=$!
wait $A $C
t1=$(date +%s.%N)
python3 - ref/metrics.jsonl el/metrics.jsonl el/events.jsonl "$REJOIN" "$(python3 -c "print($t1 - $t0)")" <<'PY'
import json, sys, statistics
def rows(f):
    r = {}
    for l in open(f):
        j = json.loads(l)
        if "loss" in j: r[j["step"]] = j
    return r
ref, el = rows(sys.argv[1]), rows(sys.argv[2])
ev = [json.loads(l) for l in open(sys.argv[3])]
print(f"Rejoin timeout {sys.argv[4]} s; wall {float(sys.argv[5]):.1f} s for 300 steps "
      f"(uninterrupted: {sum(r['step_s'] for r in ref.values()):.1f} s of steps)\n")
print("| round | ranks | steps | tokens/s (median) | cause | down (s) | steps lost |")
print("|---|---|---|---|---|---|---|")
bounds = [0] + [e["resumed_step"] for e in ev] + [301]
for i in range(len(bounds) - 1):
    steps = [k for k in el if bounds[i] < k <= bounds[i + 1]]
    tps = statistics.median(el[k]["tokens_per_s"] for k in steps[1:]) if len(steps) > 1 else 0
    e = ev[i - 1] if i > 0 else None
    print(f"| {i} | {e['world'] if e else 2} | {min(steps)}-{max(steps)} | {tps:,.0f} | "
          f"{e['cause'] if e else 'start'} | {e['down_s']:.1f} | {e['steps_lost']} |" if e else
          f"| {i} | 2 | {min(steps)}-{max(steps)} | {tps:,.0f} | start | - | - |")
print(f"\nLargest loss difference from the uninterrupted run: "
      f"{max(abs(ref[k]['loss'] - el[k]['loss']) for k in el):.2e} over {len(el)} steps")
PY
