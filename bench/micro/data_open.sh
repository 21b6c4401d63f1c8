#!/usr/bin/env bash
# bench/micro/data_open.sh [GB]: what checking a dataset at open costs (issue 16: every shard's XXH3
# checksum and every token id against the vocabulary, on every `slm train`/`eval`/`data info`).
# Prepares wikitext-2 (../shared/data) once, copies its train shard until the dataset holds GB
# gigabytes of tokens (the manifest lists the copies with their checksums), then times
# `slm data info` on it and on the small original (the difference is the check; the page cache
# is warm, as on a second run; a cold read adds the disk's time).
set -euo pipefail
SLM=${SLM:-$(cd "$(dirname "$0")/../.." && pwd)/build/slm}
GB=${1:-1}
SHARED=$(cd "$(dirname "$0")/../../.." && pwd)/shared/data
W=$(mktemp -d /tmp/slm_data_open_XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W"
src=$SHARED/wikitext-2/valid.txt
"$SLM" tokenizer train "$src" --vocab-size 8192 --out tok -q > /dev/null
"$SLM" data prepare "$src" -t tok --separator line --val-fraction 0.01 --out small -q > /dev/null
cp -r small big
python3 - big "$GB" <<'PY'
import json, os, shutil, sys
d, gb = sys.argv[1], float(sys.argv[2])
m = json.load(open(f"{d}/manifest.json"))
first = m["splits"]["train"]["shards"][0]
size = os.path.getsize(f"{d}/{first['file']}")
copies = max(1, int(gb * 1e9 / size))
for k in range(1, copies):
    name = f"train_copy_{k:05d}.bin"
    shutil.copyfile(f"{d}/{first['file']}", f"{d}/{name}")  # real copies: the check reads from memory, not cache
    m["splits"]["train"]["shards"].append({"file": name, "tokens": first["tokens"], "xxh3": first["xxh3"]})
m["splits"]["train"]["tokens"] = sum(s["tokens"] for s in m["splits"]["train"]["shards"])
json.dump(m, open(f"{d}/manifest.json", "w"), indent=1)
print(f"dataset: {copies} shards of {size / 1e6:.1f} MB = {copies * size / 1e9:.2f} GB of tokens")
PY
"$SLM" data info big > /dev/null  # warm the page cache
t() {  # best of 3
  for _ in 1 2 3; do local s=$(date +%s.%N); "$SLM" data info "$1" > /dev/null; echo "$(date +%s.%N) $s"; done |
    awk '{d = $1 - $2; if (NR == 1 || d < m) m = d} END {printf "%.3f", m}'
}
small=$(t small); big=$(t big)
echo "slm data info: small dataset $small s, $GB GB dataset $big s; the check costs" \
  "$(awk -v a="$small" -v b="$big" -v g="$GB" 'BEGIN {printf "%.3f", (b - a) / g}') s per GB" \
  "($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), one thread)"
