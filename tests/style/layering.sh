# tests/style/layering.sh: the project's layering rules (../shared/notes/style.md), checked on
# the source tree: collectives only in comm/ and parallel/; <torch/torch.h> never in a header;
# every source file opens with a comment saying what it owns; and which folders a folder's files
# may not include: the layers point down (util < tokenizer < data < model, comm < parallel <
# train < embed < cli; planner models the job and host the machine, below both). autoplan (the
# planner at run time) and train use each other: setup asks it for a plan, it reads the Config.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../../src" && pwd)
bad=0
if out=$(grep -rl 'c10d::' "$SRC" | grep -v "$SRC/\(comm\|parallel\)/"); then
  echo "c10d:: outside src/comm and src/parallel: $out"; bad=1
fi
if out=$(grep -rl '#include <torch/torch.h>' "$SRC" --include='*.h'); then
  echo "<torch/torch.h> in a header (keep it in .cpp files): $out"; bad=1
fi
# FOLDER: the folders its files must not include.
while read -r from banned; do
  for to in $banned; do
    if out=$(grep -rl "#include \"$to/" "$SRC/$from" 2>/dev/null); then
      echo "$from/ includes $to/ (the layering forbids it): $out"; bad=1
    fi
  done
done <<'RULES'
util tokenizer data model comm parallel train planner host autoplan embed cli
model comm parallel train planner autoplan embed cli
comm parallel train planner autoplan model embed cli
planner comm model train autoplan host embed cli
parallel train planner autoplan embed cli
host train autoplan parallel planner embed cli
autoplan embed cli
tokenizer data model comm parallel train planner host autoplan embed cli
data model comm parallel train planner host autoplan embed cli
train embed cli
testbed model parallel train planner host autoplan embed cli
RULES
for f in $(find "$SRC" -name '*.h' -o -name '*.cpp'); do
  head -1 "$f" | grep -q '^//' || { echo "no opening comment: $f"; bad=1; }
done
[ $bad -eq 0 ] && echo "layering: ok"
exit $bad
