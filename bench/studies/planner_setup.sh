# bench/studies/planner_setup.sh: what the planner's studies share (sourced by planner_study.sh,
# planner_picks.sh and planner_profiles.sh): the model they train (the latency study's: GPT-2-medium
# depth and heads at 256 channels, T = 128, global batch 8 of micro-batches of 2, fp32), their
# testbed of 2 sites x 2 ranks, its named scenarios and the preset layouts measured on it.
# study_model DATA_DIR: sets MODEL, the `slm train` / `slm profile` / `slm plan` options of the model.
study_model() {
  MODEL=(-c /dev/null --set data.dir="$1" --set model.n_layer=24 --set model.n_head=16 --set model.n_embd=256
         --set model.block_size=128 --set batch.batch_size=8 --set batch.micro_batch=2 --set optim.lr=1e-3
         --set schedule.warmup_steps=2 --set eval.every=0 --set checkpoint.every=0 --set log.every=1
         --set system.precision=fp32)
}
# study_cluster FILE RTT_MS RATE_MBIT CPUS_B [MEMORY_GB]: the testbed's cluster file: sites a and b of 2
# ranks, RTT_MS apart at RATE_MBIT, site b under a CPU quota of CPUS_B cores (0: none), every rank
# capped at MEMORY_GB (0: none).
study_cluster() {
  cat > "$1" <<TOML
name = "plan"
[[site]]
name = "a"
ranks = 2
memory_gb = ${5:-0}
[[site]]
name = "b"
ranks = 2
cpus = $4
memory_gb = ${5:-0}
[[link]]
sites = ["a", "b"]
delay_ms = $(python3 -c "print($2 / 2)")
rate_mbit = $3
TOML
}
# study_scenario NAME FILE: the cluster file of a named scenario (planner_study.sh says what each is).
study_scenario() {
  case $1 in
    rtt0) study_cluster "$2" 0 1000 0 ;;
    rtt20) study_cluster "$2" 20 1000 0 ;;
    rtt100) study_cluster "$2" 100 1000 0 ;;
    het20) study_cluster "$2" 20 1000 0.5 ;;
    gpu20) study_cluster "$2" 20 250 0 ;;
    mem20) study_cluster "$2" 20 1000 0 0.55 ;;
    *) echo "unknown scenario $1 (rtt0, rtt20, rtt100, het20, gpu20, mem20)" >&2; return 2 ;;
  esac
}
# The preset layouts by name: their `slm train` / `slm plan make` options.
declare -A PRESET_FLAGS=(
  [dp]=""
  [zero2]="--zero 2"
  [zero3]="--zero 3"
  [pipeshard]="--pp 2 --tp 2"
  [pp2-dp2]="--pp 2"
  [pp2-dp2-rc]="--pp 2 --set model.recompute=true"
  [pp4]="--pp 4"
  [hier-dp]="--set dist.ranks_per_site=2"
)
