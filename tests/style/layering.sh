# tests/style/layering.sh: the project's layering rules (../shared/notes/style.md), checked on
# the source tree: collectives only in comm/ and parallel/; <torch/torch.h> never in a header;
# every source file opens with a comment saying what it owns.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../../src" && pwd)
bad=0
if out=$(grep -rl 'c10d::' "$SRC" | grep -v "$SRC/\(comm\|parallel\)/"); then
  echo "c10d:: outside src/comm and src/parallel: $out"; bad=1
fi
if out=$(grep -rl '#include <torch/torch.h>' "$SRC" --include='*.h'); then
  echo "<torch/torch.h> in a header (keep it in .cpp files): $out"; bad=1
fi
for f in $(find "$SRC" -name '*.h' -o -name '*.cpp'); do
  head -1 "$f" | grep -q '^//' || { echo "no opening comment: $f"; bad=1; }
done
[ $bad -eq 0 ] && echo "layering: ok"
exit $bad
